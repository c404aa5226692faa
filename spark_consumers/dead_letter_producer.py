"""The dead-letter producer: its ``message.max.bytes`` from the topics' limits, and the
producer itself, with a bounded wait for each outcome.

A dead letter keeps the record's bytes unchanged, so the producer must take anything the
request topic holds, plus headers; the dead-letter topic is fitted to that at the start.
Publishing with it is ``dead_letters.py``'s.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from collection_manager.kafka.errors import (
    KafkaUnreachableError,
    TopicConfigError,
    TopicMissingError,
)
from collection_manager.kafka.message_limits import fit_max_message_bytes, max_message_bytes
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig

# The name it logged under before it moved here: log filters and levels may name it.
logger = logging.getLogger("spark_consumers.dead_letters")

# librdkafka refuses a larger message.max.bytes; used when the topic's limit is unknown.
PRODUCER_MAX_BYTES_CEILING = 1_000_000_000
# Beyond the request topic's limit: five bounded headers and the record framing.
HEADER_ALLOWANCE = 64 * 1024
# librdkafka reports a delivery as failed after this long, so a flush a little longer
# than it sees every outcome (its default, 5 minutes, would hold the partition that long).
DELIVERY_TIMEOUT_MS = 30_000


def producer_max_bytes(request_topic_max: int | None) -> int:
    """The dead-letter producer's ``message.max.bytes`` for the request topic's limit.

    A record the request topic holds, with its headers, must pass the producer's own
    check; an unknown limit gets librdkafka's ceiling (the broker then decides).
    """
    if request_topic_max is None:
        return PRODUCER_MAX_BYTES_CEILING
    return min(PRODUCER_MAX_BYTES_CEILING, request_topic_max + HEADER_ALLOWANCE)


def _topic_limit(bootstrap: str, topic: str) -> int | None:
    try:
        return max_message_bytes(bootstrap, [topic])[topic]
    except TopicMissingError:
        logger.info("topic %r does not exist yet: its max.message.bytes is the broker's", topic)
        return None
    except KafkaUnreachableError as exc:
        # The consumer's start fails on the same broker, and says so once (its outage).
        logger.info("max.message.bytes of %r unknown: %s", topic, exc)
        return None
    except TopicConfigError as exc:
        logger.warning("max.message.bytes of %r unknown: %s", topic, exc)
        return None


def dead_letter_max_bytes(bootstrap: str, request_topic: str, dead_letter_topic: str) -> int:
    """Reads the request topic's limit once (at start): the producer's ``message.max.bytes``.

    The dead-letter topic is made to hold that much (``fit_max_message_bytes``): created so
    when missing (else the first dead letter would make the broker create it with its
    default limit, smaller), raised when it has the broker's default. A smaller limit set
    on the topic itself is an operator's, and warned of: the largest dead letters would
    then be recorded as unpublished instead.
    """
    request_max = _topic_limit(bootstrap, request_topic)
    needed = producer_max_bytes(request_max)
    if request_max is None:
        return needed  # the broker decides
    try:
        dead_max = fit_max_message_bytes(bootstrap, dead_letter_topic, needed)
    except KafkaUnreachableError as exc:
        logger.info("max.message.bytes of %r unknown: %s", dead_letter_topic, exc)
        return needed
    if dead_max is not None and dead_max < needed:
        logger.warning(
            "dead-letter topic %r holds messages up to %d bytes, the request topic %r up to "
            "%d: its own max.message.bytes is smaller than %d, so the largest dead letters "
            "are recorded as unpublished (docs/operations.md, Dead letters)",
            dead_letter_topic, dead_max, request_topic, request_max, needed,
        )  # fmt: skip
    return needed


def dead_letter_producer(
    bootstrap: str, message_max_bytes: int, client_id: str, security: Mapping[str, str]
) -> KafkaProducer:
    """A producer for dead letters: large messages, a bounded wait for each outcome.

    Args:
        security: Kafka TLS and SASL options (``collection_manager/kafka/security.py``).
    """
    extra = {"message.max.bytes": message_max_bytes, "message.timeout.ms": DELIVERY_TIMEOUT_MS}
    config = ProducerConfig(bootstrap, client_id=client_id, extra=extra, security=security)
    return KafkaProducer(config)
