"""The consumer's status record: one Redis hash per request topic (``keys.consumer_key``)
that the Spark job writes and ``status``, ``progress show``, readiness, the demo and the
exporter read. This module alone names its fields and reads or writes it.
"""

from __future__ import annotations

import json
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

    def read(self) -> dict[str, str]:
        """Every field as text (``{}`` before the consumer's first record)."""
        return {as_text(k): as_text(v) for k, v in self._client.hgetall(self._key).items()}

    def progress(self) -> dict[str, Any]:
        """The latest recorded query progress (``{}`` before the first)."""
        raw = self._client.hget(self._key, PROGRESS)
        return dict(json.loads(raw)) if raw else {}

    def counter(self, *fields: str) -> list[int]:
        """The counters ``fields`` (0 for one never counted), in one read."""
        return [int(value or 0) for value in self._client.hmget(self._key, list(fields))]
