"""Which Kafka cluster, and which incarnation of a topic, the consumer is reading.

A topic deleted and created again keeps its name but gets a new topic id (KIP-516), and
its offsets start again at 0: progress recorded for the old one means nothing for it.
"""

from __future__ import annotations

import dataclasses

from confluent_kafka import KafkaException, TopicCollection
from confluent_kafka.admin import AdminClient

from collection_manager.kafka.errors import TopicConfigError

_TIMEOUT_S = 10.0


@dataclasses.dataclass(frozen=True)
class TopicIdentity:
    """A topic as the broker knows it now."""

    cluster_id: str
    topic_id: str
    partitions: tuple[int, ...]


def topic_identity(admin: AdminClient, topic: str, timeout_s: float = _TIMEOUT_S) -> TopicIdentity:
    """The cluster id, topic id and partitions of ``topic``.

    Raises:
        TopicConfigError: when the topic does not exist or has no id.
        KafkaException: when the broker does not answer.
    """
    cluster_id = admin.list_topics(timeout=timeout_s).cluster_id
    future = admin.describe_topics(TopicCollection([topic]), request_timeout=timeout_s)[topic]
    try:
        described = future.result(timeout=timeout_s)
    except KafkaException as exc:
        if "UNKNOWN_TOPIC" in str(exc):
            raise TopicConfigError(f"topic {topic!r} does not exist", topic=topic) from exc
        raise
    if not cluster_id or described.topic_id is None:
        raise TopicConfigError(f"the broker gives no cluster id or topic id for {topic!r}")
    partitions = tuple(sorted(p.id for p in described.partitions))
    return TopicIdentity(str(cluster_id), str(described.topic_id), partitions)
