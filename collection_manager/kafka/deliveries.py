"""What became of a producer's messages: the counts of their delivery reports
(:class:`DeliveryStats`) and the outage of the brokers they go to, one per bootstrap.

Fed by librdkafka's delivery reports, on whichever thread polls; ``producer.py``'s
``KafkaProducer`` passes them on and serves the counts as ``stats()``. Their log lines are
the producer's, so they keep its logger's name.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections import Counter
from collections.abc import Mapping

from confluent_kafka import KafkaError, Message

from collection_manager.core.outages import OutageLog

logger = logging.getLogger("collection_manager.kafka.producer")

# Delivery reports of messages dropped on purpose (``purge``), not failed.
PURGE_CODES = frozenset({KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT})
# librdkafka reports a broker away several times a second, from each producer: every
# producer of one bootstrap in this process shares one outage, logged when it begins and
# when a delivery succeeds again.
_OUTAGES: dict[str, OutageLog] = {}
_SETTLE_S = 2.0
_OUTAGES_LOCK = threading.Lock()


def broker_outage(bootstrap: str) -> OutageLog:
    """The outage log of the Kafka cluster at ``bootstrap``, shared in this process."""
    with _OUTAGES_LOCK:
        found = _OUTAGES.get(bootstrap)
        if found is None:
            found = OutageLog(logger, f"Kafka at {bootstrap}", settle_s=_SETTLE_S)
            _OUTAGES[bootstrap] = found
        return found


@dataclasses.dataclass(frozen=True)
class DeliveryStats:
    """Messages accepted into the local queue (``produced``), acknowledged by the broker
    (``delivered``), failed for good (``failed``; by librdkafka error name in ``failures``)
    and dropped by :meth:`KafkaProducer.purge` (``purged``)."""

    produced: int = 0
    delivered: int = 0
    failed: int = 0
    purged: int = 0
    failures: Mapping[str, int] = dataclasses.field(default_factory=dict)

    @property
    def pending(self) -> int:
        """Messages whose outcome is not known yet."""
        return self.produced - self.delivered - self.failed - self.purged


class DeliveryOutcomes:
    """Thread-safe counters fed by delivery reports (served by whichever thread polls)."""

    def __init__(self, outage: OutageLog | None = None) -> None:
        self.lock = threading.Lock()
        self.produced = self.delivered = self.purged = 0
        self.failures: Counter[str] = Counter()
        self._outage = outage

    def record(self, err: KafkaError | None, msg: Message) -> None:
        with self.lock:
            if err is None:
                self.delivered += 1
        if err is None:
            if self._outage is not None:
                self._outage.succeeded()
            return
        with self.lock:
            if err.code() in PURGE_CODES:
                self.purged += 1
                return
            self.failures[err.name()] += 1
            seen = self.failures[err.name()]
        # Each kind of failure is logged at its first occurrence, then every 1,000th, so a
        # broker outage cannot flood the log; stats() has the exact counts. While the
        # broker is away (its outage logged once), they are part of it: INFO, for -v.
        if seen == 1 or seen % 1000 == 0:
            away = self._outage is not None and self._outage.ongoing
            (logger.info if away else logger.error)(
                "delivery to %s [%s] failed (%s, occurrence %d): %s",
                msg.topic(), msg.partition(), err.name(), seen, err.str(),
            )  # fmt: skip

    def snapshot(self) -> DeliveryStats:
        with self.lock:
            failures = dict(self.failures)
            return DeliveryStats(
                self.produced, self.delivered, sum(failures.values()), self.purged, failures
            )
