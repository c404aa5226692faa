"""The consumer's status record: one Redis hash per request topic (``keys.consumer_key``)
that the Spark job writes and ``status``, ``progress show``, readiness, the demo and the
exporter read. This module alone names its fields and reads or writes it; readers get
it typed (:class:`ConsumerRecord`).
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any

import redis

from collection_manager.storage.client import as_text
from collection_manager.storage.keys import consumer_key

# The fields, each JSON text or an integer counter.
LAST_BATCH = "last_batch"  # JSON: the latest micro-batch's metrics, with recorded_at_ms
DEAD_LETTERS = "dead_letters"  # counter
CONTROL_REQUESTS = "control_requests"  # counter
BATCHES = "batches"  # counter
PROGRESS = "progress"  # JSON: the latest query progress's lag and rates
HEALTH = "health"  # JSON: the supervisor's state, retries, since_ms, cause
REWINDS = "rewinds"  # counter: starts that cleared Spark's checkpoint to read from progress
TOPIC_RECREATIONS = "topic_recreations"  # counter: starts that met a recreated topic
LAST_REWIND = "last_rewind"  # JSON: the latest rewind or recreation, why and when


@dataclasses.dataclass(frozen=True)
class ConsumerRecord:
    """The status record as read: the counters, and the JSON fields parsed (one another
    version wrote that is no JSON object reads as ``{}``). ``recorded`` is whether the
    consumer wrote anything yet."""

    recorded: bool = False
    batches: int = 0
    dead_letters: int = 0
    control_requests: int = 0
    rewinds: int = 0
    topic_recreations: int = 0
    last_batch: dict[str, Any] = dataclasses.field(default_factory=dict)
    progress: dict[str, Any] = dataclasses.field(default_factory=dict)
    health: dict[str, Any] = dataclasses.field(default_factory=dict)
    last_rewind: dict[str, Any] = dataclasses.field(default_factory=dict)

    @classmethod
    def parse(cls, fields: Mapping[str, str]) -> ConsumerRecord:
        """The record of the hash's fields as text (``{}``: nothing recorded)."""

        def count(name: str) -> int:
            return int(fields.get(name, 0))

        return cls(
            recorded=bool(fields),
            batches=count(BATCHES),
            dead_letters=count(DEAD_LETTERS),
            control_requests=count(CONTROL_REQUESTS),
            rewinds=count(REWINDS),
            topic_recreations=count(TOPIC_RECREATIONS),
            last_batch=_json_object(fields.get(LAST_BATCH)),
            progress=_json_object(fields.get(PROGRESS)),
            health=_json_object(fields.get(HEALTH)),
            last_rewind=_json_object(fields.get(LAST_REWIND)),
        )

    def read_offsets(self) -> dict[str, int]:
        """What the consumer's last batch read up to, per ``topic:partition``."""
        read = self.progress.get("read") or {}
        return {key: int(offset) for key, offset in read.items()}


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:  # written by another version: show what can be shown
        return {}
    return value if isinstance(value, dict) else {}


class ConsumerStatusRecord:
    """The status record of the consumer of ``topic``.

    Args:
        client: Redis (responses decoded or not: reads return text).
        topic: the consumer's request topic.
    """

    def __init__(self, client: redis.Redis, topic: str) -> None:
        self._client = client
        self._key = consumer_key(topic)

    def record_batch(self, batch: dict[str, Any], dead_letters: int, control: int) -> None:
        """Keeps a micro-batch's metrics and adds to the running totals, in one transaction."""
        with self._client.pipeline(transaction=True) as pipe:
            pipe.hset(self._key, LAST_BATCH, json.dumps(batch))
            pipe.hincrby(self._key, DEAD_LETTERS, dead_letters)
            pipe.hincrby(self._key, CONTROL_REQUESTS, control)
            pipe.hincrby(self._key, BATCHES, 1)
            pipe.execute()

    def record_progress(self, summary: dict[str, Any]) -> None:
        """Keeps the latest query progress's summary."""
        self._client.hset(self._key, PROGRESS, json.dumps(summary))

    def record_health(self, health: dict[str, Any]) -> None:
        """Keeps the supervisor's latest state."""
        self._client.hset(self._key, HEALTH, json.dumps(health))

    def count_rewind(self, field: str, event: dict[str, Any]) -> None:
        """Counts one rewind (``REWINDS``) or recreation (``TOPIC_RECREATIONS``) and keeps
        it as the latest."""
        self._client.hincrby(self._key, field, 1)
        self._client.hset(self._key, LAST_REWIND, json.dumps(event))

    def read(self) -> ConsumerRecord:
        """The whole record, in one read."""
        raw = self._client.hgetall(self._key)
        return ConsumerRecord.parse({as_text(k): as_text(v) for k, v in raw.items()})

    def progress(self) -> dict[str, Any]:
        """The latest recorded query progress (``{}`` before the first)."""
        raw = self._client.hget(self._key, PROGRESS)
        return _json_object(None if raw is None else as_text(raw))

    def counter(self, *fields: str) -> list[int]:
        """The counters ``fields`` (0 for one never counted), in one read."""
        return [int(value or 0) for value in self._client.hmget(self._key, list(fields))]
