"""Running the consumer as a process: start, watch, stop cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeVar

from confluent_kafka import KafkaException
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from collection_manager.config import ConsumerConfig, SparkConfig, redact_url
from collection_manager.core.errors import InfrastructureError
from collection_manager.kafka.errors import TopicConfigError
from collection_manager.kafka.group_offsets import GroupOffsets
from collection_manager.kafka.topics import await_topic
from collection_manager.storage.claims import ClaimLostError, ConsumerClaim, Holder
from collection_manager.storage.client import REDIS_FAULTS, redis_client
from collection_manager.storage.heartbeats import CONSUMER, Heartbeat
from collection_manager.storage.library import library_name
from collection_manager.storage.replication import Durability
from spark_consumers.broker_probe import KAFKA_CAUSE, BrokerProbe
from spark_consumers.errors import ConsumerError, fault_text
from spark_consumers.exporter import ConsumerObservability
from spark_consumers.job import start_consumer
from spark_consumers.metrics import BatchMetrics
from spark_consumers.query_watch import QuerySupervision, watch
from spark_consumers.row_ttl.retraction_timer import RetractionTimer
from spark_consumers.session import build_spark_session
from spark_consumers.store_setup import prepared_store
from spark_consumers.supervision import Outage, until_done

# What the consumer waits out instead of ending: services that do not answer or fail a call,
# a topic that is missing (deleted, to be created again), and a streaming query that stopped
# with an error (it is started again where Redis's progress says). A ProgressMismatchError
# is not among them: progress of another Kafka cluster needs an operator's decision.
TRANSIENT_FAULTS: tuple[type[BaseException], ...] = (
    *REDIS_FAULTS,
    KafkaException,
    InfrastructureError,
    TopicConfigError,
    ConsumerError,
    PySparkException,
    Py4JError,
)

logger = logging.getLogger(__name__)

T = TypeVar("T")


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` instead of killing the process mid-batch."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: stopping after the current request group", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def run_consumer(
    config: ConsumerConfig,
    spark_config: SparkConfig,
    infra_config: Any,
    endpoints: Any,
    replica_namespace: str,
    duration_s: float | None = None,
    ready: Callable[[str | None], None] | None = None,
) -> None:
    """Runs the consumer until SIGTERM/SIGINT (or ``duration_s``), through any outage.

    A fault of Redis, Kafka or the streaming query never ends it: it waits with backoff and
    starts again where Redis's progress says (``spark_consumers/startup.py``); the watermarks
    make the replay apply nothing twice.

    One consumer per topic and Redis: it first claims the topic (``storage/claims.py``),
    once Redis answers, and stops when another consumer took the claim over meanwhile.

    Raises:
        ProgressMismatchError: Redis's progress was written for another Kafka cluster.
        ClaimHeldError: another consumer of the topic runs on this Redis (before Spark).
        ClaimLostError: another consumer took the claim over while this one was silent.

    Args:
        replica_namespace: the controller's key namespace (``CM_REPLICA_NAMESPACE``).
        ready: called once, when the streaming query first runs, with the URL of the
            metrics and health listener (None without one): the CLI's ready line.
    """
    # First: a listen address that is taken ends the command before anything started.
    observed = _started_observability(config, endpoints)
    run = _ConsumerRun(config, endpoints, observed, duration_s)
    try:
        run.consume(spark_config, infra_config, replica_namespace, ready)
    finally:
        run.close()
    if run.lost:  # before the query or during it: the takeover is said, never a quiet end
        raise ClaimLostError(config.topic, run.lost[0], run.claim.expiry_s)


def _started_observability(config: ConsumerConfig, endpoints: Any) -> ConsumerObservability:
    """The consumer's metrics and health, listening (a listen address that is taken raises)."""
    observed = ConsumerObservability(
        config.topic,
        endpoints.kafka_bootstrap,
        config.consumer_metrics_address,
        endpoints.redis_url,
    ).start()
    if observed.url:
        logger.info("metrics and health at %s (/metrics, /healthz, /readyz)", observed.url)
    return observed


class _ConsumerRun:
    """What one run of the consumer holds from its start to its end, and releases at its end.

    ``consume`` first readies what the query needs, before Spark (the claim, Redis, the
    topic, the retraction timer), then runs the query, started again after each outage;
    each step waits out the ``TRANSIENT_FAULTS`` and gives up only when ``stop`` is set
    (by SIGTERM/SIGINT, ``duration_s`` or a claim taken over). ``close`` releases it all.
    """

    def __init__(
        self,
        config: ConsumerConfig,
        endpoints: Any,
        observed: ConsumerObservability,
        duration_s: float | None,
    ) -> None:
        self._config, self._endpoints, self._observed = config, endpoints, observed
        self._stop = threading.Event()
        stop_on_signals(self._stop)
        self._deadline = threading.Timer(duration_s or 0, self._stop.set)
        if duration_s is not None:
            self._deadline.start()
        self._outage = Outage(
            endpoints.redis_url,
            config.topic,
            report=lambda ongoing: observed.outage(ongoing, retried=ongoing),
        )
        self._probe = BrokerProbe(endpoints.kafka_bootstrap, self._outage)
        self.claim, self.lost = ConsumerClaim(config.topic), list[Holder]()
        self._heartbeat: Heartbeat | None = None
        self._group = (
            GroupOffsets(endpoints.kafka_bootstrap, config.topic, config.commit_group)
            if config.commit_group
            else None
        )

    def _until_done(self, attempt: Callable[[], T]) -> T | None:
        return until_done(attempt, self._outage, self._stop, TRANSIENT_FAULTS)

    def _taken_over(self, holder: Holder) -> None:  # from the heartbeat's thread
        self.lost.append(holder)
        self._stop.set()

    def consume(
        self,
        spark_config: SparkConfig,
        infra_config: Any,
        replica_namespace: str,
        ready: Callable[[str | None], None] | None,
    ) -> None:
        """Readies the query's services, then runs it until ``stop`` (which may come first)."""
        timer = self._prepare()
        if timer is None:
            return
        spark = build_spark_session(spark_config, infra_config, "collection-manager-consumer")
        config = self._config.with_checkpoint(infra_config)
        self._run_query(spark, config, replica_namespace, timer, ready)

    def _prepare(self) -> RetractionTimer | None:
        """Claims the topic, readies Redis, awaits the topic and starts the retraction timer.

        Returns the started timer, or None when stopped first.
        """
        config, redis_url = self._config, self._endpoints.redis_url
        if not self._until_done(lambda: _claim(self.claim, redis_url, self._observed)):
            return None
        self._heartbeat = Heartbeat(
            redis_url,
            CONSUMER,
            config.topic,
            library=library_name(),
            claim=self.claim,
            lost=self._taken_over,
        ).start()
        store = self._until_done(lambda: prepared_store(redis_url))
        partitions = config.topic_partitions if config.create_topic else 0
        bootstrap = self._endpoints.kafka_bootstrap
        if store is None or not await_topic(bootstrap, config.topic, self._stop, partitions):
            return None
        self._probe.start()
        timer = RetractionTimer(
            store, config.expiration_offset_ms, config.topic, durability=Durability.of(config)
        )
        if self._until_done(timer.start) is None and self._stop.is_set():
            return None
        return timer

    def _run_query(
        self,
        spark: Any,
        config: ConsumerConfig,
        replica_namespace: str,
        timer: RetractionTimer,
        ready: Callable[[str | None], None] | None,
    ) -> None:
        """Runs the streaming query until ``stop``, starting it again after each fault."""
        kafka, redis_url = self._endpoints.kafka_bootstrap, self._endpoints.redis_url
        observed = self._observed
        supervision = QuerySupervision(
            redis_url=redis_url,
            topic=config.topic,
            timer=timer,
            trigger_interval_ms=config.trigger_interval_ms,
            outage=self._outage,
            # A batch can finish from records fetched before the broker went away: only the
            # broker's own answer ends the outage its probe began.
            on_progress=lambda: self._outage.recovered(unless=KAFKA_CAUSE.format(kafka)),
            observed=observed,
        )
        while not self._stop.is_set():
            try:
                query = start_consumer(
                    spark,
                    config,
                    kafka,
                    redis_url,
                    replica_namespace=replica_namespace,
                    batch_done=_batch_done(observed, self._group),
                    replicas_refused=observed.replicas_refused,
                )
                logger.info(
                    "consuming %s from %s into %s", config.topic, kafka, redact_url(redis_url)
                )
                if ready is not None:
                    ready(observed.url)
                    ready = None  # once: a query restarted after an outage is no news
                watch(query, self._stop, supervision)
            except TRANSIENT_FAULTS as exc:
                self._stop.wait(self._outage.failed(fault_text(exc)))

    def close(self) -> None:
        """Cancels the deadline, stops the probe and the heartbeat, closes the listener and
        the group's client."""
        self._deadline.cancel()
        self._probe.stop()
        if self._heartbeat is not None:
            self._heartbeat.stop()
        self._observed.close()
        if self._group is not None:
            self._group.close()


def _claim(claim: ConsumerClaim, redis_url: str, observed: ConsumerObservability) -> bool:
    """Claims the topic (a fault of Redis is retried by the caller); True once it is ours.

    Raises:
        ClaimHeldError: another consumer of the topic holds it.
    """
    client = redis_client(redis_url, socket_connect_timeout=5, socket_timeout=5)
    try:
        stale = claim.acquire(client)
    finally:
        client.close()
    if stale is not None:
        observed.claim_taken_over()
        logger.warning(
            "took over the claim on topic %s of a consumer that no longer runs (%s)",
            claim.topic,
            stale.describe(),
        )
    return True


def _batch_done(
    observed: ConsumerObservability, group: GroupOffsets | None
) -> Callable[[BatchMetrics, float], None]:
    """What the driver does after each batch: its metrics, and the group's offsets."""

    def done(metrics: BatchMetrics, seconds: float) -> None:
        observed.batch(metrics, seconds)
        if group is None:
            return
        try:
            group.commit(metrics.last_offsets)
        except KafkaException as exc:  # the next batch commits newer offsets
            observed.group_commit_failed()
            logger.warning("committing the applied offsets to the group failed: %s", exc)

    return done
