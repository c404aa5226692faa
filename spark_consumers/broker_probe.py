"""Notices when the Kafka brokers stop answering, which Spark alone would not show.

Spark's Kafka source waits for a broker that went away inside the running micro-batch
("Current batch is falling behind") and reconnects by itself: no error reaches the
consumer, so without this probe an outage of Kafka would be neither logged nor shown in
``status``. Every ``interval_s`` a thread asks the cluster for its metadata with a short
timeout; the first failure begins an outage (logged once, kept for ``status``), the first
answer after it ends it. The probe never stops or restarts the query: Spark resumes on its
own, and the watermarks make its replay safe.
"""

from __future__ import annotations

import threading

from confluent_kafka import KafkaException

from collection_manager.kafka.topics import admin_client
from spark_consumers.supervision import Outage

KAFKA_CAUSE = "Kafka at {} does not answer"


class BrokerProbe:
    """A daemon thread that reports Kafka's outages into ``outage``.

    Args:
        bootstrap: the brokers to ask.
        outage: the consumer's outage record, shared with the query's supervision.
        interval_s: how often to ask.
    """

    def __init__(self, bootstrap: str, outage: Outage, interval_s: float = 2.0) -> None:
        self._bootstrap = bootstrap
        self._outage = outage
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="broker-probe", daemon=True)
        self._down = False
        # One client for the consumer's life: it reconnects by itself.
        self._admin = admin_client(bootstrap)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stops the thread, if it was started."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(10)

    def check(self, timeout_s: float = 3.0) -> bool:
        """Asks once; records the start or the end of an outage; whether Kafka answered."""
        try:
            self._admin.list_topics(timeout=timeout_s)
        except KafkaException as exc:
            self._down = True
            self._outage.failed(f"{KAFKA_CAUSE.format(self._bootstrap)}: {exc}")
            return False
        if self._down:
            self._down = False
            self._outage.recovered(only_if=KAFKA_CAUSE.format(self._bootstrap))
        return True

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            self.check()
