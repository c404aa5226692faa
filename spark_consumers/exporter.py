"""The consumer's Prometheus metrics and its health, served on ``CM_CONSUMER_METRICS_ADDRESS``.

Everything is measured on the driver from what the consumer already knows: the applier's
summary rows of each batch, the streaming query's progress, the outage record and the
retraction timer's ticks. Nothing extra runs on the executors, and no multiprocess mode is
needed. The lag (of Kafka) and what Redis records (unpublished dead letters, rewinds,
deletes in progress) are asked every ``LAG_PROBE_S`` by a thread of its own, so a service
that does not answer never holds up the watch loop. The metric families themselves are in
``exporter_metrics.py``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence

import redis
from confluent_kafka import KafkaException

from collection_manager.kafka.lag import lag_now
from collection_manager.observability.endpoint import serve
from collection_manager.observability.health import Health
from collection_manager.storage import consumer_status
from collection_manager.storage.catalog import catalog_records
from collection_manager.storage.client import REDIS_FAULTS, redis_client
from collection_manager.storage.consumer_status import ConsumerStatusRecord
from collection_manager.storage.cut import SettleResult
from collection_manager.storage.dead_letters import DeadLetterLedger
from collection_manager.storage.keys import CollectionKeys, catalog_units
from spark_consumers.exporter_metrics import (
    APPLIED,
    BATCH_SECONDS,
    BATCH_STEP_SECONDS,
    BATCHES,
    CLAIM_TAKEOVERS,
    CONTROL,
    CUT_GROUPS_GIVEN_UP,
    CUT_PARTS_TRIMMED,
    CUT_SETTLES,
    CUT_TRAIL,
    DEAD_LETTER_KINDS,
    DEAD_LETTERS,
    DELETES_IN_PROGRESS,
    GROUP_COMMIT_FAILURES,
    LAG,
    LAG_PROBE_FAILURES,
    LAST_BATCH,
    OUTAGE,
    OUTAGE_RETRIES,
    PUBLISH_TO_VISIBLE,
    REGISTRY,
    REPLICA_REFUSALS,
    REWINDS,
    TIMER_RETRACTIONS,
    TOPIC_RECREATIONS,
    UNPUBLISHED,
    UP,
)
from spark_consumers.metrics import BatchMetrics

logger = logging.getLogger(__name__)

# The watch loop goes round every 0.5 s and an outage retries at least every 30 s.
LOOP_MAX_AGE_S = 90.0
# Ready only while a batch (or Spark's progress of an idle trigger, every 10 s) is recent.
PROGRESS_MAX_AGE_S = 120.0
LAG_PROBE_S = 10.0


def cut_trail_ms(result: SettleResult, now_ms: int) -> int:
    """How far the cut a settle found trails its buckets at ``now_ms``: the age of the
    oldest change it holds back (0: none, or a clock behind the one that applied it)."""
    if result.held_since_ms is None:
        return 0
    return max(0, now_ms - result.held_since_ms)


class ConsumerObservability:
    """The consumer's metrics, health and listener (when ``address`` is set).

    Args:
        topic: the request topic, the ``topic`` label of every metric.
        bootstrap: Kafka, asked for the lag.
        redis_url: Redis, asked what it records of the consumer ("": never).
        clock: monotonic seconds.
    """

    def __init__(
        self,
        topic: str,
        bootstrap: str,
        address: str = "",
        redis_url: str = "",
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.topic, self._bootstrap, self._clock = topic, bootstrap, clock
        self._redis_url = redis_url
        self.health = Health(clock)
        self._read: dict[str, int] = {}  # what the last progress read, per topic:partition
        self._last_progress: float | None = None
        self._outage = self._running = False
        self._trailed: set[str] = set()  # the collections CUT_TRAIL has a series of
        self._stop = threading.Event()
        self.health.add_check("outage", lambda: "waiting out an outage" if self._outage else None)
        self.health.add_check("progress", self._progress_reason)
        for metric in (
            BATCHES,
            DEAD_LETTERS,
            CONTROL,
            TIMER_RETRACTIONS,
            OUTAGE_RETRIES,
            CLAIM_TAKEOVERS,
            REPLICA_REFUSALS,
        ):
            metric.labels(topic)  # shown as 0 from the start, so rate() sees the first one
        OUTAGE.labels(topic).set(0)
        UP.labels(topic).set(0)
        self._endpoint = serve(address, "CM_CONSUMER_METRICS_ADDRESS", REGISTRY, self.health)
        self._prober = threading.Thread(target=self._probe_lag, name="lag-probe", daemon=True)

    @property
    def url(self) -> str | None:
        return None if self._endpoint is None else self._endpoint.url

    def start(self) -> ConsumerObservability:
        self._prober.start()
        return self

    def close(self) -> None:
        self._stop.set()
        if self._endpoint is not None:
            self._endpoint.close()

    # What the consumer reports

    def batch(self, metrics: BatchMetrics, seconds: float) -> None:
        """A batch ended after ``seconds``, having done what ``metrics`` says."""
        BATCHES.labels(self.topic).inc()
        BATCH_SECONDS.labels(self.topic).observe(seconds)
        for step, micros in metrics.steps_us.items():
            BATCH_STEP_SECONDS.labels(self.topic, step).observe(micros / 1_000_000)
        now = time.time()
        LAST_BATCH.labels(self.topic).set(now)
        if metrics.oldest_timestamp_ms > 0:
            PUBLISH_TO_VISIBLE.labels(self.topic).observe(
                max(0.0, now - metrics.oldest_timestamp_ms / 1000)
            )
        DEAD_LETTERS.labels(self.topic).inc(metrics.dead_letters)
        for kind, count in metrics.dead_letter_kinds.items():
            DEAD_LETTER_KINDS.labels(self.topic, kind).inc(count)
        CONTROL.labels(self.topic).inc(metrics.control)
        for collection, counters in metrics.collections.items():
            for counter, value in counters.items():
                if value:
                    APPLIED[counter].labels(self.topic, collection).inc(value)

    def group_commit_failed(self) -> None:
        GROUP_COMMIT_FAILURES.labels(self.topic).inc()

    def claim_taken_over(self) -> None:
        CLAIM_TAKEOVERS.labels(self.topic).inc()

    def replicas_refused(self) -> None:
        REPLICA_REFUSALS.labels(self.topic).inc()

    def progress(self, read: Mapping[str, int]) -> None:
        """The query reported progress (a batch, or an idle trigger) having read ``read``."""
        self._read = dict(read)
        self._last_progress = self._clock()

    def timer_retracted(self, rows: int) -> None:
        TIMER_RETRACTIONS.labels(self.topic).inc(rows)

    def cuts_settled(self, results: Sequence[SettleResult], now_ms: int | None = None) -> None:
        """Counts what a round of settles of the bucketed collections' cuts did, and sets how
        far each cut trails at ``now_ms`` (wall clock, ms; default now): the series of a
        collection the round did not settle go."""
        now_ms = int(time.time() * 1000) if now_ms is None else now_ms
        trails = {result.collection: cut_trail_ms(result, now_ms) for result in results}
        for collection in self._trailed - trails.keys():
            CUT_TRAIL.remove(self.topic, collection)
        for collection, trail_ms in trails.items():
            CUT_TRAIL.labels(self.topic, collection).set(trail_ms / 1000)
        self._trailed = set(trails)
        for result in results:
            if result.cut is not None:
                CUT_SETTLES.labels(self.topic).inc()
            CUT_PARTS_TRIMMED.labels(self.topic).inc(result.trimmed)
            if result.given_up:
                logger.warning("gave up incomplete groups %s", ", ".join(result.given_up))
                CUT_GROUPS_GIVEN_UP.labels(self.topic).inc(len(result.given_up))

    def query_running(self, running: bool) -> None:
        """The streaming query started or stopped; its loop is watched while it runs."""
        self._running = running
        UP.labels(self.topic).set(1 if running else 0)
        if running:
            self.health.watch_loop("watch", LOOP_MAX_AGE_S)
            self._last_progress = self._clock()
        else:
            self.health.forget_loop("watch")

    def beat(self) -> None:
        """The watch loop went round."""
        self.health.beat("watch")

    def outage(self, ongoing: bool, retried: bool = False) -> None:
        self._outage = ongoing
        OUTAGE.labels(self.topic).set(1 if ongoing else 0)
        if retried:
            OUTAGE_RETRIES.labels(self.topic).inc()
        self.health.beat("watch")  # waiting out an outage is the loop doing its job

    # Inside

    def _progress_reason(self) -> str | None:
        if not self._running:
            return "the streaming query is not running"
        if self._last_progress is None:
            return None
        age = self._clock() - self._last_progress
        if age > PROGRESS_MAX_AGE_S:
            return f"no progress for {age:.0f} s (bound {PROGRESS_MAX_AGE_S:.0f} s)"
        return None

    def _probe_lag(self) -> None:
        client: redis.Redis | None = None
        while not self._stop.wait(LAG_PROBE_S):
            if self._redis_url:
                try:
                    client = client or redis_client(
                        self._redis_url, socket_timeout=2, socket_connect_timeout=2
                    )
                    self._read_redis(client)
                except REDIS_FAULTS as exc:
                    client = None  # a new client next time
                    logger.debug("reading the consumer's records in Redis: %s", exc)
            if self._read:
                self._set_lag()

    def _read_redis(self, client: redis.Redis) -> None:
        """What Redis records of the consumer: a few reads, one per collection at most."""
        UNPUBLISHED.set(DeadLetterLedger(client).counts()["unpublished"])
        status = ConsumerStatusRecord(client, self.topic)
        rewinds, recreations = status.counter(
            consumer_status.REWINDS, consumer_status.TOPIC_RECREATIONS
        )
        REWINDS.labels(self.topic).set(rewinds)
        TOPIC_RECREATIONS.labels(self.topic).set(recreations)
        units = [unit for name, raw in catalog_records(client) for unit in catalog_units(name, raw)]
        with client.pipeline(transaction=False) as pipe:
            for unit in units:
                pipe.exists(CollectionKeys(unit).pending)
            DELETES_IN_PROGRESS.set(sum(pipe.execute()))

    def _set_lag(self) -> None:
        try:
            lag = lag_now(self._bootstrap, self._read)
        except KafkaException as exc:
            LAG_PROBE_FAILURES.labels(self.topic).inc()
            logger.debug("lag probe: %s", exc)
            return
        for key, behind in lag.items():
            LAG.labels(self.topic, key.rpartition(":")[2]).set(behind)
