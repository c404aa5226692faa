"""Topics the consumer needs: wait until one exists, or create it (their size limits:
``message_limits.py``)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

from confluent_kafka import KafkaException
from confluent_kafka.admin import (
    AdminClient,
    NewTopic,
)

from collection_manager.kafka.errors import (
    KafkaUnreachableError,
    TopicConfigError,
)
from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from collection_manager.kafka.security import from_environment

logger = logging.getLogger(__name__)

_REQUEST_TIMEOUT_S = 5.0
_BACKOFF_CAP_S = 10.0


def admin_client(bootstrap: str) -> AdminClient:
    """An admin client (this process's security settings) whose librdkafka log lines go
    through Python logging."""
    options: dict[str, Any] = {
        **from_environment().client_settings(bootstrap),
        "logger": LIBRDKAFKA_LOGGER,
        "socket.timeout.ms": int(_REQUEST_TIMEOUT_S * 1000),
    }
    return AdminClient(options)


def topic_exists(admin: AdminClient, topic: str) -> bool:
    """Whether the broker knows ``topic`` (raises ``KafkaException`` when it does not answer)."""
    # All topics: asking for one by name makes a broker with auto-creation create it.
    metadata = admin.list_topics(timeout=_REQUEST_TIMEOUT_S)
    found = metadata.topics.get(topic)
    return found is not None and found.error is None


def partition_count(client: Any, topic: str, timeout_s: float = _REQUEST_TIMEOUT_S) -> int:
    """How many partitions ``topic`` has (``client``: an admin client or a producer).

    Raises:
        TopicConfigError: when the topic does not exist or the broker does not answer.
    """
    try:
        # All topics: asking for one by name makes a broker with auto-creation create it.
        found = client.list_topics(timeout=timeout_s).topics.get(topic)
    except KafkaException as exc:
        raise TopicConfigError(f"cannot read the partitions of {topic!r}: {exc}") from exc
    if found is None or found.error is not None or not found.partitions:
        raise TopicConfigError(f"topic {topic!r} does not exist")
    return len(found.partitions)


def partitions_or_create(bootstrap: str, topic: str, create_with: int) -> tuple[int, bool]:
    """How many partitions ``topic`` has, and whether this call created it: a missing one
    is created with ``create_with`` partitions (and the broker's replication factor).

    Raises:
        KafkaUnreachableError: when the broker does not answer.
        TopicConfigError: when it refuses to create the topic.
    """
    admin = admin_client(bootstrap)
    count = _described_partitions(admin, bootstrap, topic)
    if count is not None:
        return count, False
    future = admin.create_topics([NewTopic(topic, num_partitions=create_with)])[topic]
    try:
        future.result(timeout=_REQUEST_TIMEOUT_S)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise TopicConfigError(f"cannot create topic {topic!r}: {exc}", topic=topic) from exc
    else:
        logger.info("created topic %s with %d partitions", topic, create_with)
        return create_with, True
    # Another process created it first: its partitions are whatever that one chose.
    deadline = time.monotonic() + _REQUEST_TIMEOUT_S
    while (count := _described_partitions(admin, bootstrap, topic)) is None:
        if time.monotonic() > deadline:
            raise TopicConfigError(f"topic {topic!r} exists but Kafka does not describe it yet")
        time.sleep(0.1)
    return count, False


def _described_partitions(admin: AdminClient, bootstrap: str, topic: str) -> int | None:
    try:
        # All topics: asking for one by name makes a broker with auto-creation create it.
        found = admin.list_topics(timeout=_REQUEST_TIMEOUT_S).topics.get(topic)
    except KafkaException as exc:
        raise KafkaUnreachableError(f"Kafka at {bootstrap} does not answer: {exc}") from exc
    if found is None or found.error is not None or not found.partitions:
        return None
    return len(found.partitions)


def create_topic(admin: AdminClient, topic: str, partitions: int) -> None:
    """Creates ``topic``; one that exists already (another process was first) is fine."""
    future = admin.create_topics([NewTopic(topic, num_partitions=partitions)])[topic]
    try:
        future.result(timeout=_REQUEST_TIMEOUT_S)
    except KafkaException as exc:
        if "TOPIC_ALREADY_EXISTS" not in str(exc):
            raise
    logger.info("created topic %s with %d partitions", topic, partitions)


# A topic missing at a first start is normal (the agents' first requests create it): the
# wait is an INFO line, and a WARNING only once it lasted this long (a wrong CM_TOPIC).
MISSING_TOPIC_WARN_S = 30.0


def await_topic(
    bootstrap: str, topic: str, stop: threading.Event, create_partitions: int = 0
) -> bool:
    """Returns once ``topic`` exists, or False when ``stop`` is set first.

    With ``create_partitions`` > 0 a missing topic is created. The wait is logged when it
    begins (a WARNING when Kafka does not answer, else INFO), again as a WARNING once it
    lasted ``MISSING_TOPIC_WARN_S``, and when it ends; an unreachable broker is waited for
    the same way, with capped exponential backoff.
    """
    admin = admin_client(bootstrap)
    delay, waiting = 0.5, _Wait(topic)
    while not stop.is_set():
        try:
            if topic_exists(admin, topic):
                waiting.ended()
                return True
            if create_partitions > 0:
                create_topic(admin, topic, create_partitions)
                continue
            waiting.note("it does not exist yet (create it, or set CM_CREATE_TOPIC=true)", False)
        except KafkaException as exc:
            waiting.note(f"Kafka at {bootstrap} does not answer ({exc})", True)
        stop.wait(delay)
        delay = min(delay * 2, _BACKOFF_CAP_S)
    return False


class _Wait:
    """The log lines of one wait for a topic: its start, a late warning, its end."""

    def __init__(self, topic: str) -> None:
        self.topic = topic
        self.since: float | None = None
        self.warned = False

    def note(self, cause: str, alarming: bool) -> None:
        now = time.monotonic()
        if self.since is None:
            self.since = now
            self.warned = alarming
            level = logging.WARNING if alarming else logging.INFO
            logger.log(level, "waiting for topic %s: %s", self.topic, cause)
        elif not self.warned and now - self.since >= MISSING_TOPIC_WARN_S:
            self.warned = True
            logger.warning(
                "still waiting for topic %s after %.0f s: %s", self.topic, now - self.since, cause
            )

    def ended(self) -> None:
        if self.since is not None:
            level = logging.WARNING if self.warned else logging.INFO
            logger.log(
                level, "topic %s is there after %.1f s", self.topic, time.monotonic() - self.since
            )
