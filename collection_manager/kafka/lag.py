"""How far behind Kafka's newest offsets a consumer is, asked of Kafka now."""

from __future__ import annotations

import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, TopicPartition

from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from collection_manager.kafka.security import from_environment

# Kafka gets this long, all partitions together, so that status answers within 2 s.
KAFKA_BUDGET_S = 1.0


def lag_now(
    bootstrap: str, read: dict[str, int], budget_s: float = KAFKA_BUDGET_S
) -> dict[str, int]:
    """Per ``topic:partition``: what Kafka holds now beyond what the consumer last read.

    Raises:
        KafkaException: when the broker does not answer within ``budget_s`` in all.
    """
    deadline = time.monotonic() + budget_s
    options: dict[str, Any] = {
        **from_environment().client_settings(bootstrap),
        "group.id": "collection-manager-status",
        "logger": LIBRDKAFKA_LOGGER,
    }
    consumer = Consumer(options)
    try:
        if not read:
            # The consumer recorded nothing yet: no lag, but "reachable" must be true.
            consumer.list_topics(timeout=budget_s)
        lag = {}
        for key, offset in read.items():
            topic, _, partition = key.rpartition(":")
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaException(f"no answer within {budget_s} s")
            _, high = consumer.get_watermark_offsets(
                TopicPartition(topic, int(partition)), timeout=left
            )
            lag[key] = max(0, high - offset)
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
    options: dict[str, Any] = {
        **from_environment().client_settings(bootstrap),
        "group.id": "collection-manager-status",
        "logger": LIBRDKAFKA_LOGGER,
    }
    consumer = Consumer(options)
    try:
        described = consumer.list_topics(topic, timeout=budget_s).topics.get(topic)
        if described is None or described.error is not None or not described.partitions:
            raise KafkaException(f"topic {topic} does not exist")
        ends = {}
        for partition in sorted(described.partitions):
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaException(f"no answer within {budget_s} s")
            _, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=left)
            ends[f"{topic}:{partition}"] = high
        return ends
    finally:
        consumer.close()
