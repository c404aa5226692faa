"""A consumer without Spark: one process, a confluent-kafka poll loop, the same store code.

The no-Spark baseline of ``bench/e2e.py``. Each poll returns a batch of records; they are
grouped by partition (offset order is kept within a partition), decoded and validated by
the consumer's own ``decode_records`` and applied by ``RedisStore.apply_requests``, the
same atomic, idempotent apply the Spark job runs; only then are the offsets committed, so
a crash replays at most the last batch, which the store's watermarks skip.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable, MutableSequence
from typing import Any, Protocol

from confluent_kafka import Consumer, KafkaException, Message

from collection_manager.core.epochs import claimed_replicas
from collection_manager.kafka.producer import KafkaProducer
from collection_manager.storage.client import redis_client
from collection_manager.storage.dead_letters import DeadLetterLedger
from collection_manager.storage.epochs import IssuedEpochs
from collection_manager.storage.store import RedisStore
from spark_consumers.dead_letter_producer import dead_letter_producer, producer_max_bytes
from spark_consumers.dead_letters import send_dead_letters
from spark_consumers.decode import KafkaRecord, decode_records, refuse_unissued

logger = logging.getLogger(__name__)

# Positions in the caller's timings sequence: seconds spent per phase, and counts.
TIMINGS = ("busy", "decode", "apply", "commit", "records", "dead_letters", "batches")


class Flag(Protocol):
    """What the loop needs of an event (``threading.Event``, ``multiprocessing.Event``)."""

    def set(self) -> None: ...

    def is_set(self) -> bool: ...


@dataclasses.dataclass(frozen=True)
class LoopSettings:
    """Where the loop reads and writes, and how large a batch it polls.

    Attributes:
        poll_timeout_s: how long one poll gathers records; like a (short) trigger, it
            trades latency for fewer, larger request groups.
    """

    bootstrap: str
    redis_url: str
    topic: str
    group_id: str
    dead_letter_topic: str
    max_batch: int = 10_000
    poll_timeout_s: float = 0.1
    max_request_bytes: int = 1_048_576
    replica_namespace: str = "cm:replicas"


def by_partition(messages: Iterable[Message]) -> dict[int, list[KafkaRecord]]:
    """The records of a polled batch per partition, each list in offset order.

    Raises:
        KafkaException: for a message that carries an error instead of a record.
    """
    grouped: dict[int, list[KafkaRecord]] = {}
    for message in messages:
        if message.error() is not None:
            raise KafkaException(message.error())
        # A message without an error always has its topic, partition and offset.
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        assert topic is not None and partition is not None and offset is not None
        record = KafkaRecord(topic, partition, offset, message.key(), message.value())
        grouped.setdefault(record.partition, []).append(record)
    for records in grouped.values():
        records.sort(key=lambda r: r.offset)  # already ordered; cheap insurance
    return grouped


def _apply_batch(
    store: RedisStore,
    issued: IssuedEpochs,
    dead_letters: KafkaProducer,
    ledger: DeadLetterLedger,
    settings: LoopSettings,
    batch: dict[int, list[KafkaRecord]],
    timings: MutableSequence[float],
) -> None:
    specs = store.specs()
    for partition, records in batch.items():
        start = time.perf_counter()
        decoded = decode_records(records, specs, settings.max_request_bytes)
        # The consumer's epoch check, one round trip per partition
        # (docs/concepts/epochs-and-fences.md).
        replicas = claimed_replicas(r for _, r in decoded.requests)
        decoded = refuse_unissued(decoded, records, issued.authority(replicas))
        decoded_at = time.perf_counter()
        dead = send_dead_letters(
            dead_letters, ledger, settings.dead_letter_topic, decoded.dead_letters
        )
        store.apply_requests(settings.topic, partition, decoded.requests, validated=True)
        timings[1] += decoded_at - start
        timings[2] += time.perf_counter() - decoded_at
        timings[4] += len(records)
        timings[5] += dead


def _consumer(settings: LoopSettings, ready: Flag) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": settings.bootstrap,
            "group.id": settings.group_id,
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,  # committed after the apply, never before
        }
    )

    def on_assign(_consumer: Any, _partitions: Any) -> None:
        ready.set()

    consumer.subscribe([settings.topic], on_assign=on_assign)
    return consumer


def run(settings: LoopSettings, ready: Flag, stop: Flag, timings: MutableSequence[float]) -> None:
    """Consumes until ``stop`` is set; ``ready`` is set once partitions are assigned.

    Args:
        timings: ``len(TIMINGS)`` numbers, added to as batches are applied (a shared
            array when the loop runs in another process).
    """
    store = RedisStore.connect(settings.redis_url)
    ledger = DeadLetterLedger(redis_client(settings.redis_url))
    issued = IssuedEpochs(redis_client(settings.redis_url), settings.replica_namespace)
    # A benchmark baseline: the generous limit, without asking the broker.
    dead_letters = dead_letter_producer(
        settings.bootstrap, producer_max_bytes(None), "plain-loop-dlq", security={}
    )
    consumer = _consumer(settings, ready)
    try:
        while not stop.is_set():
            messages = consumer.consume(settings.max_batch, settings.poll_timeout_s)
            if not messages:
                continue
            start = time.perf_counter()
            batch = by_partition(messages)
            _apply_batch(store, issued, dead_letters, ledger, settings, batch, timings)
            applied_at = time.perf_counter()
            consumer.commit(asynchronous=False)
            timings[3] += time.perf_counter() - applied_at
            timings[0] += time.perf_counter() - start
            timings[6] += 1
    finally:
        consumer.close()
        dead_letters.close()
