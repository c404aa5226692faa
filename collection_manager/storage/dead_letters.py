"""The consumer's record of dead letters in Redis: progress per partition, unpublished ones.

A dead letter is handled once its publication was acknowledged, or, when publishing
failed, once it is recorded here as *unpublished*. Per ``(topic, partition)`` the hash
``DONE`` keeps the highest offset whose dead letter was handled; a replayed micro-batch
skips dead letters at or below it, so each bad record is counted, and normally published,
once (docs/operations.md, "Dead letters"). The mark, the unpublished records and the
counters move together in one script call (``dead_letters.lua``).

All keys share the hash tag ``{dead-letters}``, so on a Redis Cluster they sit in one slot
and the script may touch them together.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any, cast

import redis

# Hash ``topic:partition`` -> the highest offset whose dead letter was handled.
DONE = "cm:{dead-letters}:done"
# Hash ``topic:partition:offset`` -> JSON of a dead letter that could not be published.
UNPUBLISHED = "cm:{dead-letters}:unpublished"
# List of the newest ``UNPUBLISHED`` fields, newest first, at most ``RECENT_KEPT``.
RECENT = "cm:{dead-letters}:recent"
# Hash of counters: ``published``, ``unpublished`` (each bad record once).
COUNTS = "cm:{dead-letters}:counts"
RECENT_KEPT = 100
# A script of its own, not part of the collections' function library: it shares no helper
# with it and touches only the keys above.
_SCRIPT = resources.files(__package__).joinpath("dead_letters.lua").read_text()

# Reasons come from error messages that may quote the rejected data: bound what is kept.
REASON_MAX_BYTES = 1024
_TRUNCATED = " …[truncated {} bytes]"


def bounded(text: str, max_bytes: int = REASON_MAX_BYTES) -> bytes:
    """``text`` as UTF-8 of at most ``max_bytes``; when cut, it ends with a marker.

    The cut never splits a character, and the marker says how many bytes were left out.
    """
    data = text.encode()
    if len(data) <= max_bytes:
        return data
    # The marker's own length depends on the count it shows; reserve for the widest one.
    marker_room = len(_TRUNCATED.format(len(data)).encode())
    if max_bytes < marker_room:  # no room for the marker: cut alone
        return data[:max_bytes].decode(errors="ignore").encode()
    kept = data[: max_bytes - marker_room].decode(errors="ignore").encode()
    return kept + _TRUNCATED.format(len(data) - len(kept)).encode()


def bounded_text(text: str, max_bytes: int = REASON_MAX_BYTES) -> str:
    """:func:`bounded` as text."""
    return bounded(text, max_bytes).decode()


def partition_field(topic: str, partition: int) -> str:
    """The field of ``(topic, partition)`` in ``DONE``."""
    return f"{topic}:{partition}"


@dataclasses.dataclass(frozen=True)
class UnpublishedLetter:
    """A dead letter whose publication failed: where it is and why on both counts.

    Attributes:
        error: why the record is a dead letter (the error class name).
        reason: that error's message (bounded).
        publish_error: why publishing failed (a librdkafka error name, or the error class).
        publish_reason: that failure's message (bounded).
        recorded_at_ms: when the consumer recorded it (Unix ms).
    """

    topic: str
    partition: int
    offset: int
    error: str
    reason: str
    publish_error: str
    publish_reason: str
    recorded_at_ms: int

    @property
    def field(self) -> str:
        """Its field in ``UNPUBLISHED``: ``topic:partition:offset``."""
        return f"{self.topic}:{self.partition}:{self.offset}"

    def to_json(self) -> str:
        """The stored JSON, with both reasons bounded."""
        record = dataclasses.asdict(self)
        record["reason"] = bounded_text(self.reason)
        record["publish_reason"] = bounded_text(self.publish_reason)
        return json.dumps(record)

    @classmethod
    def from_json(cls, text: str | bytes) -> UnpublishedLetter:
        """The record of ``to_json`` (unknown fields of another version are ignored)."""
        record = json.loads(text)
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in record.items() if k in names})


class DeadLetterLedger:
    """The dead-letter keys of one Redis (any client; responses decoded or not)."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._record = client.register_script(_SCRIPT)

    def done(self, topic: str, partition: int) -> int:
        """The highest offset of ``(topic, partition)`` whose dead letter was handled; -1."""
        value = self._client.hget(DONE, partition_field(topic, partition))
        return -1 if value is None else int(cast(Any, value))

    def record(
        self,
        topic: str,
        partition: int,
        last_offset: int,
        published: int,
        unpublished: Sequence[UnpublishedLetter] = (),
    ) -> bool:
        """Records the dead letters of ``(topic, partition)`` up to ``last_offset``.

        Call it after the published ones were acknowledged. Returns False, writing
        nothing, when the mark already was at or beyond ``last_offset``.
        """
        args: list[Any] = [partition_field(topic, partition), last_offset, published, RECENT_KEPT]
        for letter in unpublished:
            args += [letter.field, letter.to_json()]
        return bool(self._record(keys=[DONE, UNPUBLISHED, RECENT, COUNTS], args=args))

    def counts(self) -> dict[str, int]:
        """``published`` and ``unpublished``: dead letters handled so far."""
        raw = cast(dict[Any, Any], self._client.hgetall(COUNTS))
        values = {_text(k): int(v) for k, v in raw.items()}
        return {name: values.get(name, 0) for name in ("published", "unpublished")}

    def recent_unpublished(self, limit: int = 5) -> list[UnpublishedLetter]:
        """The newest unpublished dead letters still recorded, newest first."""
        fields = cast(list[Any], self._client.lrange(RECENT, 0, max(0, limit - 1)))
        if not fields:
            return []
        values = cast(list[Any], self._client.hmget(UNPUBLISHED, fields))
        return [UnpublishedLetter.from_json(v) for v in values if v is not None]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
