"""Where a change log's last duration begins (``collections tail --since 5m``), and the
newest changes of several logs: the clocks the entries record, with no Redis of their own.

A collection's times count its request groups, not the clock; but each change-log entry
records the wall clock of the call that wrote it (``LOG_CLOCK_FIELD``, Redis's ``TIME`` in
ms). The clocks grow with the times, so the first time of the last duration is found by a
binary search over the times, each probe the first entry at a time or later (one
``XRANGE <key> <t>-0 + COUNT 1`` of ``change_log.ChangeLog``): at most ``MAX_PROBES``
probes of one entry each, however long the log.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

import redis

ChangeT = TypeVar("ChangeT")

# Times stay below 2^53 (the numeric domain), so the search halves its range at most 53
# times, after one read of the log's first entry.
MAX_PROBES = 64

# ``(time, clock)`` of the first entry at a time or later (clock None: an entry an older
# library wrote), None when there is none.
Probe = Callable[[int], tuple[int, int | None] | None]


def redis_now_ms(client: redis.Redis) -> int:
    """Redis's clock (``TIME``) in ms: the clock the log's entries record, not this
    machine's. (On a cluster, one node's: the nodes' clocks are kept in step, NTP.)"""
    seconds, micros = client.time()
    return int(seconds) * 1000 + int(micros) // 1000


class _Counted:
    """A probe, counted: the halving of the search keeps it under ``MAX_PROBES``."""

    def __init__(self, probe: Probe) -> None:
        self._probe, self.calls = probe, 0

    def __call__(self, time: int) -> tuple[int, int | None] | None:
        self.calls += 1
        if self.calls > MAX_PROBES:  # the halving below makes this unreachable
            raise AssertionError(f"more than {MAX_PROBES} probes")
        return self._probe(time)


def first_recent_time(probe: Probe, since_ms: int, through: int) -> int:
    """The first time ``<= through`` whose changes were applied at ``since_ms`` or later,
    by the clocks the log records; ``through + 1`` when there is none (an empty log, or
    every change older). Reading the log from it gives the changes of the last duration.

    An entry without a clock (written before the log recorded one) counts as older than any
    duration. The clocks of successive times do not decrease, but after a failover to a
    replica whose clock is a little behind they may step back: the search then lands at a
    time near the true start, which is close enough for "the last 5 minutes".
    """
    ask = _Counted(probe)

    def recent(found: tuple[int, int | None] | None) -> bool:
        # Whether the search may stop at or before a probe's time: nothing readable from
        # there on, or an entry at least as new as since_ms.
        if found is None or found[0] > through:
            return True
        return found[1] is not None and found[1] >= since_ms

    first = ask(0)
    if recent(first):
        return through + 1 if first is None else min(first[0], through + 1)
    assert first is not None
    # The answer lies in (low, high]: the first entry at or after `high` is recent (high =
    # through + 1: none is readable there), and none at or before `low` is.
    low, high, answer = first[0], through + 1, through + 1
    while high - low > 1:
        middle = (low + high) // 2
        found = ask(middle)
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
