"""The controller's ticks: one per partition every lease check, so log time moves
(docs/concepts/leases-and-retention.md).

A tick is a ``Heartbeat`` of the reserved id ``CONTROLLER_ID`` (``core/ticks.py``) with the
tick time in ``sent_at``, sent to an explicit partition. Its epoch is issued once per
controller from the reserved id's counter, like any epoch, so the consumer accepts it.

A lost tick costs nothing: the next one supersedes it, and log time only stands still
meanwhile (which postpones expiry, never hastens it). So publishing a tick never raises for
Kafka being away; the lease check goes on and the next tick is tried at the next interval.
"""

from __future__ import annotations

import logging
import time

from collection_manager.control.members import MemberRecord
from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.outages import OutageLog
from collection_manager.core.requests import Heartbeat
from collection_manager.core.ticks import CONTROLLER_ID
from collection_manager.kafka.errors import TopicConfigError
from collection_manager.kafka.producer import KafkaProducer
from collection_manager.kafka.topics import partition_count
from schemas.codec import encode_request

logger = logging.getLogger(__name__)

# Partitions can be added to a topic; read the count again this often (monotonic seconds).
_PARTITIONS_MAX_AGE_S = 60.0
# How long a tick may wait for the broker's acknowledgement before the check goes on.
_FLUSH_S = 1.0


class Ticker:
    """Publishes the controller's ticks to every partition of ``topic``.

    Args:
        producer: the controller's producer.
        members: the namespace's membership keys, where the controller's epoch is issued.
        topic: the requests topic.
    """

    def __init__(self, producer: KafkaProducer, members: MemberRecord, topic: str) -> None:
        self._producer = producer
        self._members = members
        self.topic = topic
        self._epoch: int | None = None
        self._partitions: tuple[int, float] | None = None  # (count, read at, monotonic)
        self._outage = OutageLog(logger, f"publishing ticks to {topic}")

    def tick(self, at: int) -> bool:
        """Sends a tick of time ``at`` to each partition; returns whether all were acked.

        Failures (Kafka away, the topic missing) are logged, not raised: see the module.
        """
        try:
            count = self._partition_count()
            value = encode_request(Heartbeat(CONTROLLER_ID, self._controller_epoch(), at))
            for partition in range(count):
                self._producer.produce(
                    self.topic, CONTROLLER_ID.encode(), value, partition=partition
                )
        except CollectionManagerError as exc:
            # Before the first agent's requests create the topic, that is normal.
            missing = isinstance(exc, TopicConfigError) and "does not exist" in str(exc)
            self._outage.failed(f"tick {at}: {exc} (log time stands still)", not missing)
            return False
        self._outage.succeeded()
        return self._producer.flush(_FLUSH_S) == 0

    def _controller_epoch(self) -> int:
        if self._epoch is None:
            self._epoch = self._members.next_epoch(CONTROLLER_ID)
        return self._epoch

    def _partition_count(self) -> int:
        now = time.monotonic()
        if self._partitions is None or now - self._partitions[1] > _PARTITIONS_MAX_AGE_S:
            self._partitions = (partition_count(self._producer.producer, self.topic), now)
        return self._partitions[0]
