"""Per-batch metrics of the consumer: aggregated on the driver, logged, kept in Redis.

Per-collection totals already accumulate in each collection's stats hash (written by the
library's ``cm_apply`` in the same step as the data); this adds what only the consumer knows: the
batch, its dead letters and control requests, and the last offset per partition.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections import Counter
from collections.abc import Iterable
from functools import cache
from typing import Any

import redis

from collection_manager.storage.client import redis_client
from collection_manager.storage.consumer_status import ConsumerStatusRecord
from collection_manager.storage.counters import APPLY_COUNTERS
from spark_consumers.steps import EXECUTOR_STEPS, step_column

logger = logging.getLogger(__name__)


@dataclasses.dataclass(frozen=True)
class BatchMetrics:
    """What one micro-batch did."""

    batch_id: int
    collections: dict[str, dict[str, int]]
    dead_letters: int
    control: int
    last_offsets: dict[int, int]
    oldest_timestamp_ms: int = 0  # of the batch's records, by Kafka timestamp; 0: unknown
    dead_letter_kinds: dict[str, int] = dataclasses.field(default_factory=dict)  # by error
    # Microseconds per step (spark_consumers/steps.py): the executors' summed over tasks,
    # then the driver's, added by ``with_driver_steps``.
    steps_us: dict[str, int] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(cls, batch_id: int, rows: Iterable[Any]) -> BatchMetrics:
        """Aggregates the applier's summary rows (Spark Rows or mappings)."""
        collections: dict[str, dict[str, int]] = {}
        dead = control = 0
        offsets: dict[int, int] = {}
        stamps = []
        kinds: Counter[str] = Counter()
        steps: Counter[str] = Counter()
        for row in rows:
            values = row.asDict() if hasattr(row, "asDict") else dict(row)
            steps.update({s: int(values.get(step_column(s)) or 0) for s in EXECUTOR_STEPS})
            partition = int(values["partition"])
            offsets[partition] = max(offsets.get(partition, -1), int(values["last_offset"]))
            dead += int(values["dead_letters"])
            control += int(values["control"])
            stamps.append(int(values.get("oldest_timestamp_ms") or 0))
            kinds.update(_kinds(values.get("dead_letter_kinds")))
            if values["collection"]:
                totals = collections.setdefault(
                    values["collection"], dict.fromkeys(APPLY_COUNTERS, 0)
                )
                for counter in APPLY_COUNTERS:
                    totals[counter] += int(values[counter])
        oldest = min((stamp for stamp in stamps if stamp > 0), default=0)
        return cls(batch_id, collections, dead, control, offsets, oldest, dict(kinds), dict(steps))

    def with_driver_steps(self, micros: dict[str, int]) -> BatchMetrics:
        """These metrics with the driver's steps added."""
        return dataclasses.replace(self, steps_us={**self.steps_us, **micros})

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready record."""
        return dataclasses.asdict(self)


def _kinds(text: str | None) -> dict[str, int]:
    """A summary row's dead letters by error kind (JSON; absent in older rows)."""
    try:
        value = json.loads(text or "{}")
    except ValueError:
        return {}
    return {str(k): int(v) for k, v in value.items()} if isinstance(value, dict) else {}


@cache
def _client(url: str) -> redis.Redis:
    return redis_client(url)


def record_batch(redis_url: str, topic: str, metrics: BatchMetrics) -> None:
    """Logs the batch and keeps it (and running totals) in Redis for ``status``."""
    requests = sum(c["requests"] for c in metrics.collections.values())
    logger.info(
        "batch %d: %d requests, %d dead letters, %d control, offsets %s",
        metrics.batch_id,
        requests,
        metrics.dead_letters,
        metrics.control,
        metrics.last_offsets,
    )
    record = dict(metrics.to_json(), recorded_at_ms=int(time.time() * 1000))
    status = ConsumerStatusRecord(_client(redis_url), topic)
    status.record_batch(record, metrics.dead_letters, metrics.control)


def _offsets(value: Any) -> dict[str, int]:
    """``topic:partition -> offset`` of a source offset (JSON text or dict) of a progress."""
    if isinstance(value, str):
        value = json.loads(value)
    if not isinstance(value, dict):
        return {}
    return {
        f"{topic}:{partition}": int(offset)
        for topic, partitions in value.items()
        for partition, offset in partitions.items()
    }


def read_offsets(progress: dict[str, Any]) -> dict[str, int]:
    """The offsets per ``topic:partition`` a StreamingQueryProgress's batch read up to."""
    read: dict[str, int] = {}
    for source in progress.get("sources", []):
        read.update(_offsets(source.get("endOffset")))
    return read


def partition_lag(progress: dict[str, Any]) -> dict[str, int]:
    """Kafka lag per ``topic:partition`` from a StreamingQueryProgress (as a dict).

    The Kafka source reports, per batch, the offsets it read up to (``endOffset``) and the
    latest offsets available when it planned the batch (``latestOffset``). Without
    ``maxOffsetsPerTrigger`` a batch reads all there is, so this is 0: ``status`` measures
    the lag against Kafka's offsets at the time it is asked.
    """
    read, lag = read_offsets(progress), {}
    for source in progress.get("sources", []):
        for key, latest in _offsets(source.get("latestOffset")).items():
            lag[key] = max(0, latest - read.get(key, 0))
    return lag


def caught_up(progress: dict[str, Any]) -> bool:
    """Whether the query finished a batch (since it started) that read all there was.

    Until then, requests that were waiting in Kafka (a backlog after an outage or a
    restart) may not be applied yet: among them, appends that refresh rows' TTLs.
    """
    return bool(progress.get("sources")) and not any(partition_lag(progress).values())


def record_progress(redis_url: str, topic: str, progress: dict[str, Any]) -> None:
    """Logs a query progress and keeps its lag and rates in Redis for ``status``."""
    lag = partition_lag(progress)
    summary = {
        "batch_id": progress.get("batchId"),
        "input_rows": progress.get("numInputRows"),
        "input_rows_per_s": progress.get("inputRowsPerSecond"),
        "processed_rows_per_s": progress.get("processedRowsPerSecond"),
        "duration_ms": progress.get("durationMs", {}).get("triggerExecution"),
        "lag": lag,
        "read": read_offsets(progress),
        "timestamp": progress.get("timestamp"),
    }
    logger.info(
        "progress: batch %s, %s rows, %.0f rows/s, lag %d",
        summary["batch_id"],
        summary["input_rows"],
        summary["processed_rows_per_s"] or 0.0,
        sum(lag.values()),
    )
    ConsumerStatusRecord(_client(redis_url), topic).record_progress(summary)
