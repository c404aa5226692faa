"""Topics' size limits (``max.message.bytes``): read them, and raise a broker default that
is too small for the records a producer must send (the dead letters' copies of requests)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewTopic,
)

from collection_manager.kafka.errors import (
    KafkaUnreachableError,
    TopicConfigError,
    TopicMissingError,
)
from collection_manager.kafka.topics import admin_client

# The name it logged under before it moved here: log filters and levels may name it.
logger = logging.getLogger("collection_manager.kafka.topics")

MAX_MESSAGE_BYTES = "max.message.bytes"
# librdkafka's codes for a broker that did not answer, rather than one that refused.
_UNANSWERED = frozenset(
    {KafkaError._TRANSPORT, KafkaError._TIMED_OUT, KafkaError._ALL_BROKERS_DOWN}
)


def max_message_bytes(
    bootstrap: str, topics: Sequence[str], timeout_s: float = 10.0
) -> dict[str, int]:
    """Each topic's ``max.message.bytes`` (the largest record batch it accepts).

    Raises:
        TopicMissingError: when a topic does not exist.
        KafkaUnreachableError: when the broker does not answer.
        TopicConfigError: when the broker refuses to describe a topic.
    """
    admin = admin_client(bootstrap)
    return {name: entry[0] for name, entry in _limits(admin, topics, timeout_s).items()}


def _limits(admin: AdminClient, topics: Sequence[str], timeout_s: float) -> dict[str, Any]:
    """Each topic's ``max.message.bytes`` and whether it is set on the topic itself."""
    resources = [ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics]
    futures = admin.describe_configs(resources, request_timeout=timeout_s)
    found: dict[str, Any] = {}
    for resource, future in futures.items():
        try:
            entries = future.result(timeout_s)
        except (KafkaException, TimeoutError) as exc:
            raise _describe_error(exc)(f"cannot describe topic {resource.name!r}: {exc}") from exc
        entry = entries[MAX_MESSAGE_BYTES]
        own = _source(entry) == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
        found[resource.name] = (int(entry.value), own)
    return found


def _source(entry: ConfigEntry) -> int:
    source: Any = entry.source  # a ConfigSource, or its number
    return int(getattr(source, "value", source))


def fit_max_message_bytes(
    bootstrap: str, topic: str, at_least: int, timeout_s: float = 10.0
) -> int | None:
    """Makes ``topic`` hold messages of ``at_least`` bytes, where that is not an operator's
    choice: a missing topic is created so (the broker's default partitions and
    replication), before a producer's first message would make the broker create it with
    its default limit; one that has the broker's default limit, smaller, gets its own. A
    limit set on the topic itself is left as it is. A refusal is logged as one warning.

    Returns:
        The topic's limit now (None when the broker refused to create or describe it).

    Raises:
        KafkaUnreachableError: when the broker does not answer.
    """
    admin = admin_client(bootstrap)
    try:
        limit, own = _limits(admin, [topic], timeout_s)[topic]
    except TopicMissingError:
        return _create_for(admin, topic, at_least, timeout_s)
    except KafkaUnreachableError:
        raise
    except TopicConfigError as exc:
        logger.warning("%s", exc)
        return None
    if limit >= at_least or own:
        return limit
    return _raise_limit(admin, topic, limit, at_least, timeout_s)


def _raise_limit(
    admin: AdminClient, topic: str, limit: int, at_least: int, timeout_s: float
) -> int:
    """Sets ``topic``'s own limit to ``at_least``; its limit after (``limit`` if refused)."""
    entry = ConfigEntry(
        MAX_MESSAGE_BYTES, str(at_least), incremental_operation=AlterConfigOpType.SET
    )
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=[entry])
    future = admin.incremental_alter_configs([resource], request_timeout=timeout_s)[resource]
    try:
        future.result(timeout_s)
    except (KafkaException, TimeoutError) as exc:
        raised = _describe_error(exc)
        if raised is KafkaUnreachableError:
            raise raised(f"cannot alter topic {topic!r}: {exc}") from exc
        logger.warning(
            "topic %s holds messages up to %d bytes, the broker's default, and %d are needed; "
            "raising it was refused (%s): allow this client AlterConfigs on the topic, and "
            "the next start raises it",
            topic, limit, at_least, exc,
        )  # fmt: skip
        return limit
    logger.warning(
        "set max.message.bytes of topic %s to %d (it had the broker's default, %d)",
        topic, at_least, limit,
    )  # fmt: skip
    return at_least


def _create_for(admin: AdminClient, topic: str, at_least: int, timeout_s: float) -> int | None:
    new = NewTopic(topic, -1, -1, config={MAX_MESSAGE_BYTES: str(at_least)})
    future = admin.create_topics([new], request_timeout=timeout_s)[topic]
    try:
        future.result(timeout_s)
    except (KafkaException, TimeoutError) as exc:
        if "TOPIC_ALREADY_EXISTS" in str(exc):  # another process was first
            return max_message_bytes_of(admin, topic, timeout_s)
        raised = _describe_error(exc)
        if raised is KafkaUnreachableError:
            raise raised(f"cannot create topic {topic!r}: {exc}") from exc
        logger.warning(
            "cannot create topic %s for messages up to %d bytes: %s", topic, at_least, exc
        )
        return None
    logger.info("created topic %s for messages up to %d bytes", topic, at_least)
    return at_least


def max_message_bytes_of(admin: AdminClient, topic: str, timeout_s: float) -> int | None:
    """``topic``'s limit, or None when the broker refuses to say."""
    try:
        return int(_limits(admin, [topic], timeout_s)[topic][0])
    except KafkaUnreachableError:
        raise
    except TopicConfigError:
        return None


def _describe_error(exc: BaseException) -> type[TopicConfigError]:
    """The error to raise for a failed admin request."""
    error = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    if not isinstance(error, KafkaError):
        return KafkaUnreachableError if isinstance(exc, TimeoutError) else TopicConfigError
    if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART:
        return TopicMissingError
    return KafkaUnreachableError if error.code() in _UNANSWERED else TopicConfigError
