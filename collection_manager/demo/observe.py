"""What the demo reads while it runs: rows in Redis, the controller, the consumer, Kafka.

Everything comes from where an operator would look: the storage collections and the
consumer's records in Redis (as ``collections query`` and ``status`` read them), the controller's
membership records, Kafka's end offsets, and the consumer's Spark checkpoint, whose last
committed micro-batch says exactly up to which offset every partition is applied.
"""

from __future__ import annotations

import contextlib
import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from collection_manager.control.controller import Controller, ReplicaStatus
from collection_manager.core.specs import Row
from collection_manager.demo.frames import ConsumerView
from collection_manager.kafka.security import from_environment
from collection_manager.storage.client import redis_client
from collection_manager.storage.consumer_status import ConsumerStatusRecord
from collection_manager.storage.store import RedisStore
from schemas.introspection import REPLICA_COLUMN
from spark_consumers.row_ttl.clock import trigger_start_ms

Offsets = dict[int, int]


def parse_offset_log(text: str, topic: str) -> Offsets | None:
    """The end offsets of ``topic`` in one file of a Spark checkpoint's ``offsets/`` log.

    The file is a version line, a metadata line, then one JSON line per source; the Kafka
    source's is ``{"topic": {"partition": next offset, ...}}``.
    """
    for line in text.splitlines()[2:]:
        with contextlib.suppress(ValueError):
            offsets = json.loads(line)
            if isinstance(offsets, dict) and isinstance(offsets.get(topic), dict):
                return {int(p): int(o) for p, o in offsets[topic].items()}
    return None


def lag(end: Mapping[int, int], position: Mapping[int, int] | None) -> int | None:
    """Requests in Kafka (up to ``end``) beyond the consumer's ``position``."""
    if position is None:
        return None
    return sum(max(0, offset - position.get(p, 0)) for p, offset in end.items())


def caught_up(position: Mapping[int, int] | None, target: Mapping[int, int]) -> bool:
    """Whether the consumer applied every request before ``target`` in every partition."""
    return position is not None and all(position.get(p, 0) >= o for p, o in target.items())


def split_by_replica(rows: Mapping[Row, int], position: int = 0) -> dict[str, Counter[Row]]:
    """A collection's rows grouped by their ``replica_id``, the value at ``position``."""
    groups: dict[str, Counter[Row]] = {}
    for row, multiplicity in rows.items():
        groups.setdefault(str(row[position]), Counter())[row] = multiplicity
    return groups


def rows_per_replica(rows: Mapping[Row, int], position: int = 0) -> Counter[str]:
    """A collection's rows counted by ``replica_id``, multiplicities included."""
    groups = split_by_replica(rows, position)
    return Counter({replica: sum(group.values()) for replica, group in groups.items()})


def recorded_after(progress: Mapping[str, Any], wall_s: float) -> bool:
    """Whether a recorded query progress is of a trigger that started after ``wall_s``."""
    return trigger_start_ms(progress) > wall_s * 1000


class Observer:
    """Reads the pipeline; one per demo run.

    Args:
        store: the storage collections.
        controller: the demo's controller (membership, leases).
        redis_url: where the consumer records its progress.
        bootstrap: Kafka, for the end offsets.
        topic: the requests topic.
        checkpoint: the consumer's Spark checkpoint directory.
        collections: the introspection collections, in display order.
    """

    def __init__(
        self,
        store: RedisStore,
        controller: Controller,
        redis_url: str,
        bootstrap: str,
        topic: str,
        checkpoint: Path,
        collections: Sequence[str],
    ) -> None:
        self.store = store
        self.collections = list(collections)
        self._controller = controller
        self._redis = redis_client(redis_url, decode_responses=True)
        self._topic = topic
        self._checkpoint = checkpoint
        # Only for metadata and end offsets: it never subscribes nor commits.
        self._kafka = Consumer(
            {
                **from_environment().client_settings(bootstrap),
                "group.id": "collection-manager-demo-offsets",
                "enable.auto.commit": False,
            }
        )
        self._partitions: list[int] = []

    def close(self) -> None:
        """Closes the Kafka and Redis clients."""
        self._kafka.close()
        self._redis.close()

    def rows(self) -> tuple[dict[str, Counter[str]], dict[str, int]]:
        """Per collection, rows by replica; and per collection, all its rows."""
        by_replica = {
            c: rows_per_replica(self.store.snapshot(c).rows, self._replica_position(c))
            for c in self.collections
        }
        totals = {c: sum(counts.values()) for c, counts in by_replica.items()}
        return by_replica, totals

    def replica_rows(self, replicas: Iterable[str]) -> dict[str, dict[str, Counter[Row]]]:
        """Per replica, its rows in every collection, from one full read of each.

        Not through the ``replica_id`` index: the verdict checks removals, which must keep
        that index right, so it must not trust it.
        """
        split = {
            c: split_by_replica(self.store.snapshot(c).rows, self._replica_position(c))
            for c in self.collections
        }
        return {r: {c: split[c].get(r, Counter()) for c in self.collections} for r in replicas}

    def _replica_position(self, collection: str) -> int:
        return self.store.spec(collection).column_names.index(REPLICA_COLUMN)

    def statuses(self) -> dict[str, ReplicaStatus]:
        """The controller's record of every replica, by id."""
        return {status.replica_id: status for status in self._controller.replicas()}

    def progress(self) -> dict[str, Any]:
        """The consumer's latest recorded query progress (``{}`` before its first)."""
        return ConsumerStatusRecord(self._redis, self._topic).progress()

    def consumer(self, end: Mapping[int, int] | None = None) -> ConsumerView:
        """The consumer's counters, rate and lag (against ``end``, default Kafka's now)."""
        record = ConsumerStatusRecord(self._redis, self._topic).read()
        updates = sum(self.store.stats(c).get("updates", 0) for c in self.collections)
        return ConsumerView(
            batches=record.batches,
            requests_per_s=float(record.progress.get("input_rows_per_s") or 0.0),
            lag=lag(self.end_offsets() if end is None else end, self.position()),
            updates=updates,
            dead_letters=record.dead_letters,
        )

    def end_offsets(self) -> Offsets:
        """Kafka's end offset (the next offset to be written) of every partition."""
        if not self._partitions:
            metadata = self._kafka.list_topics(self._topic, timeout=10)
            self._partitions = sorted(metadata.topics[self._topic].partitions)
        return {
            p: int(self._kafka.get_watermark_offsets(TopicPartition(self._topic, p), 10)[1])
            for p in self._partitions
        }

    def position(self) -> Offsets | None:
        """Up to where (exclusive) the consumer applied each partition; None before a batch.

        Spark writes ``offsets/N`` before micro-batch N and ``commits/N`` once its sink (the
        apply to Redis) finished, so the offsets of the highest committed batch are applied.
        """
        try:
            done = [
                int(p.name) for p in (self._checkpoint / "commits").iterdir() if p.name.isdigit()
            ]
            if not done:
                return None
            return parse_offset_log(
                (self._checkpoint / "offsets" / str(max(done))).read_text(), self._topic
            )
        except FileNotFoundError:  # not written yet, or an old batch purged meanwhile
            return None
