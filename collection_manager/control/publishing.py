"""How the controller's membership requests reach Kafka: in order, each keyed by its storage
unit (or its replica id) and to its partition where it has one, and flushed before the call
returns.

The flush is what the controller's callers rely on: a replica added after its removal finds
the retractions ahead of the new incarnation's appends in each partition. A request that is
not acknowledged raises, so the member change it announces is not recorded as done.
(The ticks, which may be lost, are published by ``ticks.py`` instead.)
"""

from __future__ import annotations

from collections.abc import Sequence

from collection_manager.control.errors import ControllerError
from collection_manager.core.requests import Request, request_key
from collection_manager.kafka.producer import KafkaProducer
from schemas.codec import encode_request

# A request and the partition it must be produced to (None: its key picks one).
Placed = tuple[Request, int | None]


def publish(producer: KafkaProducer, topic: str, requests: Sequence[Placed]) -> None:
    """Produces ``requests`` in order, each keyed by ``request_key`` (its storage unit,
    or its replica id) and to its partition when it has one (else the key picks it),
    and waits for every acknowledgement.

    Raises:
        ControllerError: when a request was not acknowledged or failed.
    """
    failed_before = producer.stats().failed
    for request, partition in requests:
        key = request_key(request)
        producer.produce(topic, key.encode(), encode_request(request), partition=partition)
    remaining = producer.flush(30)
    failed = producer.stats().failed - failed_before
    if remaining or failed:
        raise ControllerError(
            f"{remaining} requests unacknowledged and {failed} failed", topic=topic
        )
