"""How far behind Kafka's newest offsets a consumer is, asked of Kafka now."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from collection_manager.kafka.security import from_environment

# Kafka gets this long, all partitions together, so that status answers within 2 s.
KAFKA_BUDGET_S = 1.0


def _consumer(bootstrap: str) -> Any:
    options: dict[str, Any] = {
        **from_environment().client_settings(bootstrap),
        "group.id": "collection-manager-status",
        "logger": LIBRDKAFKA_LOGGER,
    }
    return Consumer(options)


def _partitions(consumer: Any, topic: str, budget_s: float) -> list[int] | None:
    """The partitions of ``topic``, None when it does not exist."""
    described = consumer.list_topics(topic, timeout=budget_s).topics.get(topic)
    if described is None or described.error is not None or not described.partitions:
        return None
    return sorted(described.partitions)


def _watermarks(consumer: Any, key: str, deadline: float, budget_s: float) -> tuple[int, int]:
    """``(low, high)`` of the ``topic:partition`` ``key``: its first offset still held and
    the offset its next record will get."""
    topic, _, partition = key.rpartition(":")
    left = deadline - time.monotonic()
    if left <= 0:
        raise KafkaException(f"no answer within {budget_s} s")
    low, high = consumer.get_watermark_offsets(TopicPartition(topic, int(partition)), timeout=left)
    return int(low), int(high)


def lag_now(
    bootstrap: str,
    read: Mapping[str, int],
    budget_s: float = KAFKA_BUDGET_S,
    topic: str | None = None,
) -> dict[str, int]:
    """Per ``topic:partition``: what Kafka holds now beyond what the consumer last read.

    With ``topic``, every partition of it, those the consumer reported no read of too
    (before its first batch ends, while rows of that batch already appear): all Kafka
    still holds of them is behind. Without, the partitions of ``read``.

    Raises:
        KafkaException: when the broker does not answer within ``budget_s`` in all.
    """
    deadline = time.monotonic() + budget_s
    consumer = _consumer(bootstrap)
    try:
        keys = list(read)
        if topic is not None:
            partitions = _partitions(consumer, topic, budget_s) or []
            keys += [f"{topic}:{p}" for p in partitions if f"{topic}:{p}" not in read]
        elif not read:
            # The consumer recorded nothing yet: no lag, but "reachable" must be true.
            consumer.list_topics(timeout=budget_s)
        lag = {}
        for key in keys:
            low, high = _watermarks(consumer, key, deadline, budget_s)
            lag[key] = max(0, high - read.get(key, low))
        return lag
    finally:
        consumer.close()


def end_offsets(bootstrap: str, topic: str, budget_s: float = KAFKA_BUDGET_S) -> dict[str, int]:
    """Per ``topic:partition`` of ``topic``: the offset its next record will get, now.

    Raises:
        KafkaException: when the broker does not answer within ``budget_s`` in all, or
            ``topic`` does not exist.
    """
    deadline = time.monotonic() + budget_s
    consumer = _consumer(bootstrap)
    try:
        partitions = _partitions(consumer, topic, budget_s)
        if partitions is None:
            raise KafkaException(f"topic {topic} does not exist")
        keys = [f"{topic}:{partition}" for partition in partitions]
        return {key: _watermarks(consumer, key, deadline, budget_s)[1] for key in keys}
    finally:
        consumer.close()
