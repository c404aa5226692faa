"""Where a change log's last duration begins: ``collections tail --since 5m``.

A collection's times count its request groups, not the clock; but each change-log entry
records the wall clock of the call that wrote it (``LOG_CLOCK_FIELD``, Redis's ``TIME`` in
ms). The clocks grow with the times, so the first time of the last duration is found by a
binary search over the times, each probe one ``XRANGE <key> <t>-0 + COUNT 1``: at most
``MAX_PROBES`` calls of one entry each, however long the log.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, TypeVar, cast

import redis

from collection_manager.storage.keys import LOG_CLOCK_FIELD, CollectionKeys

if TYPE_CHECKING:  # step_reads reads the clocks of entries with entry_clock
    from collection_manager.storage.step_reads import LogEntries

ChangeT = TypeVar("ChangeT")

# Times stay below 2^53 (the numeric domain), so the search halves its range at most 53
# times, after one read of the log's first entry.
MAX_PROBES = 64

_CLOCK = LOG_CLOCK_FIELD.encode()


def redis_now_ms(client: redis.Redis) -> int:
    """Redis's clock (``TIME``) in ms: the clock the log's entries record, not this
    machine's. (On a cluster, one node's: the nodes' clocks are kept in step, NTP.)"""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


def entry_clock(fields: dict[bytes, bytes]) -> int | None:
    """The clock an entry records, None for one an older library wrote (without it)."""
    raw = fields.get(_CLOCK)
    return None if raw is None else int(raw)


def _entry_time(entry_id: bytes) -> int:
    return int(entry_id.split(b"-")[0])


class _Probe:
    """The first entry at a time or later, one bounded ``XRANGE`` each, counted."""

    def __init__(self, client: Any, key: str) -> None:
        self._client, self._key, self.calls = client, key, 0

    def __call__(self, low: str) -> tuple[int, int | None] | None:
        """``(time, clock)`` of the first entry at or after ``low`` (an XRANGE bound)."""
        self.calls += 1
        if self.calls > MAX_PROBES:  # the halving below makes this unreachable
            raise AssertionError(f"more than {MAX_PROBES} probes of {self._key}")
        entries = cast("LogEntries", self._client.xrange(self._key, min=low, max="+", count=1))
        if not entries:
            return None
        entry_id, fields = entries[0]
        return _entry_time(entry_id), entry_clock(fields)


def first_time_since(client: Any, collection: str, since_ms: int, through: int) -> int:
    """The first time ``<= through`` whose changes were applied at ``since_ms`` or later,
    by the clocks the log records; ``through + 1`` when there is none (an empty log, or
    every change older). Reading the log from it gives the changes of the last duration.

    An entry without a clock (written before the log recorded one) counts as older than any
    duration. The clocks of successive times do not decrease, but after a failover to a
    replica whose clock is a little behind they may step back: the search then lands at a
    time near the true start, which is close enough for "the last 5 minutes".
    """
    probe = _Probe(client, CollectionKeys(collection).log)

    def recent(found: tuple[int, int | None] | None) -> bool:
        # Whether the search may stop at or before a probe's time: nothing readable from
        # there on, or an entry at least as new as since_ms.
        if found is None or found[0] > through:
            return True
        return found[1] is not None and found[1] >= since_ms

    first = probe("-")
    if recent(first):
        return through + 1 if first is None else min(first[0], through + 1)
    assert first is not None
    # The answer lies in (low, high]: the first entry at or after `high` is recent (high =
    # through + 1: none is readable there), and none at or before `low` is.
    low, high, answer = first[0], through + 1, through + 1
    while high - low > 1:
        middle = (low + high) // 2
        found = probe(f"{middle}-0")
        if recent(found):
            high = middle
            answer = through + 1 if found is None else min(found[0], through + 1)
        else:
            assert found is not None
            low = max(middle, found[0])  # no entry between middle and found's time
    return answer


def newest_of_logs(
    logs: Sequence[Sequence[tuple[int | None, ChangeT]]], count: int
) -> list[tuple[int, ChangeT]]:
    """The newest ``count`` changes of several logs together (a bucketed collection's
    buckets, whose times do not compare), by the clocks their entries record:
    ``(log, change)``, each log's oldest first, in log order.

    ``logs`` holds each log's newest changes, oldest first, with their clocks (at least
    ``count`` of each, when it has them). A change without a clock counts as older than
    any with one; among equal clocks, the later in its log wins.
    """
    ranked = [
        (-1 if clock is None else clock, position, log)
        for log, changes in enumerate(logs)
        for position, (clock, _) in enumerate(changes)
    ]
    kept = sorted(ranked)[max(0, len(ranked) - count) :] if count else []
    chosen = sorted((log, position) for _, position, log in kept)
    return [(log, logs[log][position][1]) for log, position in chosen]
