"""Applied offsets committed to a Kafka consumer group, where the ecosystem reads lag.

Spark's Kafka source commits no consumer-group offsets, so kafka_exporter, Burrow and
``kafka-consumer-groups.sh --describe`` cannot see the consumer. With ``CM_COMMIT_GROUP``
the driver commits, after each batch, the offset after the last one applied in each
partition. Nobody reads them back: Redis's progress stays the truth of what was applied
(a commit lost to a crash only makes the group look behind until the next batch).
"""

from __future__ import annotations

from collections.abc import Mapping

from confluent_kafka import Consumer, KafkaException, TopicPartition

from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from collection_manager.kafka.security import from_environment


class GroupOffsets:
    """Commits the applied offsets of ``topic`` to consumer group ``group``.

    The client never subscribes: it joins no group, so it commits as a simple consumer
    that takes part in no rebalance.
    """

    def __init__(self, bootstrap: str, topic: str, group: str, timeout_s: float = 5.0) -> None:
        self._topic, self._timeout_s = topic, timeout_s
        self._client = Consumer(
            {
                **from_environment().client_settings(bootstrap),
                "group.id": group,
                "enable.auto.commit": False,
                "logger": LIBRDKAFKA_LOGGER,
            }
        )

    def commit(self, last_applied: Mapping[int, int]) -> None:
        """Commits, per partition, the offset after its last applied one.

        Raises:
            KafkaException: when the group coordinator does not take the commit.
        """
        if not last_applied:
            return
        offsets = [
            TopicPartition(self._topic, partition, offset + 1)
            for partition, offset in sorted(last_applied.items())
            if offset >= 0
        ]
        for committed in self._client.commit(offsets=offsets, asynchronous=False) or []:
            if committed.error is not None:
                raise KafkaException(committed.error)

    def close(self) -> None:
        self._client.close()
