"""What the broker says about topics: their configured message size limits."""

from __future__ import annotations

from collections.abc import Sequence

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource

from collection_manager.kafka.errors import TopicConfigError

MAX_MESSAGE_BYTES = "max.message.bytes"


def max_message_bytes(
    bootstrap: str, topics: Sequence[str], timeout_s: float = 10.0
) -> dict[str, int]:
    """Each topic's ``max.message.bytes`` (the largest record batch it accepts).

    Raises:
        TopicConfigError: when a topic does not exist or the broker does not answer.
    """
    admin = AdminClient({"bootstrap.servers": bootstrap})
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
    futures = admin.describe_configs(resources, request_timeout=timeout_s)
    found: dict[str, int] = {}
    for resource, future in futures.items():
        try:
            entries = future.result(timeout_s)
        except (KafkaException, TimeoutError) as exc:
            raise TopicConfigError(f"cannot describe topic {resource.name!r}: {exc}") from exc
        found[resource.name] = int(entries[MAX_MESSAGE_BYTES].value)
    return found
