"""The executor side: apply one Kafka partition's requests, in offset order, to Redis.

``PartitionApplier`` is the function ``mapInPandas`` runs on each input partition (one
or more Kafka partitions, one after the other, each in offset order). It decodes the
records, sends bad ones to the dead-letter topic, applies the rest through the store's
atomic, idempotent apply, and yields one summary row per collection touched for the
driver's metrics. The store and the worker's other connections are made once per
Python worker process (``executor_resources.py``).
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from typing import TYPE_CHECKING, Any

from collection_manager.config import ConsumerConfig
from collection_manager.core.epochs import EpochAuthority, claimed_replicas
from collection_manager.storage.counters import APPLY_COUNTERS
from collection_manager.storage.writes import StoreWriter
from spark_consumers.dead_letters import REFUSED_KIND, send_dead_letters, send_refused
from spark_consumers.decode import Decoded, KafkaRecord, decode_records, refuse_unissued
from spark_consumers.executor_resources import RESOURCES
from spark_consumers.python_worker import cheapen_next_task
from spark_consumers.steps import EXECUTOR_STEPS, StepTimer, step_column

if TYPE_CHECKING:
    import pandas as pd

logger = logging.getLogger(__name__)

SUMMARY_SCHEMA = ", ".join(
    [
        "partition int",
        "collection string",
        *(f"{c} long" for c in APPLY_COUNTERS),
        "dead_letters long",
        "control long",
        "last_offset long",
        "oldest_timestamp_ms long",
        "dead_letter_kinds string",
        *(f"{step_column(step)} long" for step in EXECUTOR_STEPS),
    ]
)
_DEAD_LETTERS = ""  # the summary row of a partition's dead letters and control requests


@dataclasses.dataclass(frozen=True)
class ExecutorSettings:
    """What the executors need; shipped to them with the function, so plain values only.

    Attributes:
        replica_namespace: the controller's key namespace (``CM_REPLICA_NAMESPACE``), where
            the executors read the issued epochs and record sightings and log times.
        kafka_security: the driver's Kafka TLS and SASL options for the dead-letter
            producer (executors may not have its environment); not shown by ``repr``.
    """

    kafka_bootstrap: str
    redis_url: str
    dead_letter_topic: str
    max_request_bytes: int
    log_max_length: int
    dead_letter_max_bytes: int  # the dead-letter producer's message.max.bytes
    replica_namespace: str
    redis_run_id: str = ""  # the Redis process the driver planned with; "" checks nothing
    kafka_security: tuple[tuple[str, str], ...] = dataclasses.field(default=(), repr=False)

    @classmethod
    def of(
        cls,
        config: ConsumerConfig,
        bootstrap: str,
        redis_url: str,
        dead_letter_max_bytes: int,
        replica_namespace: str,
        redis_run_id: str = "",
        kafka_security: Mapping[str, str] | None = None,
    ) -> ExecutorSettings:
        """The settings of a consumer configuration."""
        return cls(
            bootstrap,
            redis_url,
            config.dead_letter_topic,
            config.max_request_bytes,
            config.log_max_length,
            dead_letter_max_bytes,
            replica_namespace,
            redis_run_id,
            tuple(sorted((kafka_security or {}).items())),
        )


def _records(frame: pd.DataFrame) -> list[KafkaRecord]:
    return [
        KafkaRecord(
            t, int(p), int(o), None if k is None else bytes(k), None if v is None else bytes(v)
        )
        for t, p, o, k, v in zip(
            frame["topic"],
            frame["partition"],
            frame["offset"],
            frame["key"],
            frame["value"],
            strict=True,
        )
    ]


def _oldest_ms(frame: pd.DataFrame) -> int:
    """The oldest Kafka timestamp of a chunk in ms (0 without the column or a value)."""
    if "timestamp" not in frame:
        return 0
    oldest = frame["timestamp"].min()
    return 0 if oldest is None or oldest != oldest else int(oldest.timestamp() * 1000)


def by_partition(frame: pd.DataFrame) -> Iterator[pd.DataFrame]:
    """A chunk's rows of each Kafka partition, each in the chunk's order.

    A task applies several Kafka partitions one after the other (``job.py`` coalesces
    them to one task per core), and one Arrow chunk may hold the end of one and the start
    of the next; the store applies one partition's requests at a time.
    """
    for _, part in frame.groupby("partition", sort=False):
        yield part


class PartitionApplier:
    """The ``mapInPandas`` function of the consumer (picklable: it holds only settings)."""

    def __init__(self, settings: ExecutorSettings) -> None:
        self.settings = settings

    def __call__(self, frames: Iterable[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        import pandas as pd

        cheapen_next_task()
        store = RESOURCES.store(self.settings)
        for frame in frames:
            for part in by_partition(frame):
                yield pd.DataFrame(self.apply(store, _records(part), _oldest_ms(part)))

    def apply(
        self, store: StoreWriter, records: list[KafkaRecord], oldest_ms: int = 0
    ) -> list[dict[str, Any]]:
        """Applies one chunk of a partition's records; returns its summary rows.

        ``oldest_ms``: the oldest Kafka timestamp among them (0: unknown), reported in the
        partition's row for the driver's publish-to-visible latency.
        """
        topic, partition = records[0].topic, records[0].partition
        timer = StepTimer()
        decoded, authority = self._decode(store, records, timer)
        kinds: Counter[str] = Counter()
        dead_letters = self._send_dead_letters(decoded, kinds, timer)
        with timer.step("apply"):
            counts = store.apply_requests(topic, partition, decoded.requests, validated=True)
        dead_letters += self._send_refused(store, counts, records, kinds)
        self._record_sightings(topic, partition, decoded, authority, timer)
        last = records[-1].offset
        rows = [_summary(partition, name, c, last) for name, c in counts.items()]
        control = sum(1 for _, r in decoded.requests if not hasattr(r, "collection"))
        rows.append(
            _summary(
                partition,
                _DEAD_LETTERS,
                {},
                last,
                dead_letters=dead_letters,
                control=control,
                oldest_timestamp_ms=oldest_ms,
                dead_letter_kinds=json.dumps(kinds),
                step_micros=timer.micros,
            )
        )
        return rows

    def _decode(
        self, store: StoreWriter, records: list[KafkaRecord], timer: StepTimer
    ) -> tuple[Decoded, EpochAuthority]:
        """The chunk's valid requests of issued epochs (the rest dead letters), and the
        epochs the controller issued to the replicas they name."""
        with timer.step("decode"):
            decoded = decode_records(
                records, store.catalog.specs(), self.settings.max_request_bytes
            )
        with timer.step("epochs"):
            # One round trip for the replicas this chunk names, not one per request.
            replicas = claimed_replicas(r for _, r in decoded.requests)
            authority = RESOURCES.issued_epochs(self.settings).authority(replicas)
            decoded = refuse_unissued(decoded, records, authority)
        return decoded, authority

    def _send_dead_letters(self, decoded: Decoded, kinds: Counter[str], timer: StepTimer) -> int:
        """Publishes (or records as unpublished) the chunk's dead letters; how many."""
        # Before the apply, and never raising for a delivery: a dead letter is published
        # or recorded as unpublished, once, and the partition moves on either way.
        with timer.step("dead_letters"):
            return send_dead_letters(
                RESOURCES.dead_letter_producer(self.settings),
                RESOURCES.ledger(self.settings),
                self.settings.dead_letter_topic,
                decoded.dead_letters,
                kinds,
            )

    def _send_refused(
        self,
        store: StoreWriter,
        counts: Mapping[str, Mapping[str, int]],
        records: list[KafkaRecord],
        kinds: Counter[str],
    ) -> int:
        """Publishes the dead letters of the appends the store refused; how many."""
        refusing = [name for name, c in counts.items() if c.get("refused")]
        if not refusing:
            return 0
        refused = send_refused(
            RESOURCES.dead_letter_producer(self.settings),
            self.settings.dead_letter_topic,
            store,
            refusing,
            records,
        )
        if refused:
            kinds[REFUSED_KIND] += refused
        return refused

    def _record_sightings(
        self,
        topic: str,
        partition: int,
        decoded: Decoded,
        authority: EpochAuthority,
        timer: StepTimer,
    ) -> None:
        # After the apply: the controller renews leases from these heartbeats and measures
        # them in the log time of the ticks among them (idempotent).
        seen_at = int(time.time() * 1000)
        issued = {replica: epochs.highest for replica, epochs in authority.issued.items()}
        with timer.step("sightings"):
            RESOURCES.replica_record(self.settings).record(
                topic, partition, decoded.requests, seen_at, issued
            )


def _summary(
    partition: int,
    collection: str,
    counts: dict[str, int],
    last_offset: int,
    dead_letters: int = 0,
    control: int = 0,
    oldest_timestamp_ms: int = 0,
    dead_letter_kinds: str = "{}",
    step_micros: dict[str, int] | None = None,
) -> dict[str, Any]:
    row: dict[str, Any] = {"partition": partition, "collection": collection}
    row.update({c: counts.get(c, 0) for c in APPLY_COUNTERS})
    row.update(dead_letters=dead_letters, control=control, last_offset=last_offset)
    row.update(oldest_timestamp_ms=oldest_timestamp_ms, dead_letter_kinds=dead_letter_kinds)
    row.update({step_column(s): (step_micros or {}).get(s, 0) for s in EXECUTOR_STEPS})
    return row
