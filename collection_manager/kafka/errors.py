"""Errors of the Kafka client area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ProducerError(CollectionManagerError):
    """The producer failed: a fatal librdkafka error, or a message it refused."""


class ProducerQueueFullError(ProducerError):
    """The local queue stayed full through every retry; ``queue_size`` says how full."""

    def __init__(self, topic: str, queue_size: int, retries: int) -> None:
        message = f"producer queue full for {topic!r}: {queue_size} queued after {retries} retries"
        super().__init__(message, topic=topic)
        self.queue_size = queue_size


class TopicConfigError(CollectionManagerError):
    """A topic's configuration could not be read (missing topic, broker not answering)."""


class TopicMissingError(TopicConfigError):
    """The topic does not exist (yet): normal before its first message, unlike a broker
    that does not answer."""


class KafkaUnreachableError(TopicConfigError):
    """The broker did not answer in time: part of an outage, which the consumer reports
    once, rather than something wrong with the topic."""
