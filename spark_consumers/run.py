"""Running the consumer as a process: start, watch, stop cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Any

from confluent_kafka import KafkaException
from py4j.protocol import Py4JError
from pyspark.errors import PySparkException

from collection_manager.config import ConsumerConfig, SparkConfig, redact_url
from collection_manager.core.errors import InfrastructureError
from collection_manager.kafka.errors import TopicConfigError
from collection_manager.kafka.group_offsets import GroupOffsets
from collection_manager.kafka.topics import await_topic
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.claims import ClaimLostError, ConsumerClaim, Holder
from collection_manager.storage.client import REDIS_FAULTS, connected_client, redis_client
from collection_manager.storage.heartbeats import CONSUMER, Heartbeat
from collection_manager.storage.library import install, library_name
from collection_manager.storage.replication import Durability
from collection_manager.storage.writes import StoreWriter
from schemas.introspection import introspection_specs
from spark_consumers.broker_probe import BrokerProbe
from spark_consumers.errors import ConsumerError, fault_text, reduced_message
from spark_consumers.exporter import ConsumerObservability
from spark_consumers.job import start_consumer
from spark_consumers.metrics import BatchMetrics, read_offsets, record_progress
from spark_consumers.retraction_timer import RetractionTimer
from spark_consumers.session import build_spark_session
from spark_consumers.supervision import Outage, until_done
from spark_consumers.ttl_clock import ttl_clock_ms

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


def ensure_introspection_collections(store: Catalog) -> None:
    """Creates the built-in introspection collections that do not exist yet."""
    existing = set(store.collections())
    for spec in introspection_specs():
        if spec.name not in existing:
            store.create_collection(spec)


def stop_on_signals(stop: threading.Event) -> None:
    """SIGTERM and SIGINT set ``stop`` instead of killing the process mid-batch."""

    def handler(signum: int, _frame: FrameType | None) -> None:
        logger.info("signal %d: stopping after the current request group", signum)
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _as_dict(progress: Any) -> dict[str, Any]:
    # PySpark 4 returns a StreamingQueryProgress; its JSON is the stable, documented form.
    if progress is None:
        return {}
    return dict(json.loads(progress.json)) if hasattr(progress, "json") else dict(progress)


def watch(
    query: Any,
    stop: threading.Event,
    duration_s: float | None = None,
    redis_url: str = "",
    timer: RetractionTimer | None = None,
    on_progress: Callable[[], None] | None = None,
    outage: Outage | None = None,
    trigger_interval_ms: int = 0,
    topic: str = "",
    observed: ConsumerObservability | None = None,
) -> None:
    """Waits until ``stop`` is set, ``duration_s`` passed or the query failed; then stops it.

    Meanwhile it ticks ``timer`` about every 0.5 s, with the TTL clock of the query's
    progress and status and of ``outage`` (``spark_consumers/ttl_clock.py``), and tells
    ``observed`` of each round and each progress.

    Stopping interrupts the running micro-batch between two atomic store calls: what was
    applied is recorded in the watermarks, and the restarted query replays the rest.

    Raises:
        ConsumerError: when the query stopped with an error.
    """
    deadline = None if duration_s is None else time.monotonic() + duration_s
    last_batch = last_progress = None
    if observed is not None:
        observed.query_running(True)
    try:
        while not stop.is_set() and query.isActive:
            if deadline is not None and time.monotonic() >= deadline:
                break
            query.awaitTermination(0.5)
            progress = _as_dict(query.lastProgress)
            if timer is not None:
                ended = None if outage is None else outage.ended_ms()
                status, now_ms = dict(query.status), int(time.time() * 1000)
                clock = ttl_clock_ms(progress, status, now_ms, trigger_interval_ms, ended)
                retracted = timer.tick(clock)
                settled = timer.settle_cuts(clock)
                if observed is not None:
                    observed.timer_retracted(retracted)
                    observed.cuts_settled(settled)
            if observed is not None:
                observed.beat()
            # An idle trigger reports progress too (a new timestamp, the same batch id).
            if progress and progress.get("timestamp") != last_progress:
                last_progress = progress.get("timestamp")
                if observed is not None:
                    observed.progress(read_offsets(progress))
            if redis_url and progress and progress.get("batchId") != last_batch:
                last_batch = progress.get("batchId")
                record_progress(redis_url, topic, progress)
                if on_progress is not None:
                    on_progress()
    finally:
        if observed is not None:
            observed.query_running(False)
        stop_between_batches(query)
    if query.exception() is not None:
        failure = reduced_message(str(query.exception()))
        raise ConsumerError(f"the consumer's streaming query failed: {failure}")


def stop_between_batches(query: Any, patience_s: float = 30.0) -> None:
    """Stops the query, between two micro-batches when one ends within ``patience_s``.

    ``query.stop()`` interrupts a running batch, and py4j then logs the interrupted
    ``foreachBatch`` call as an ERROR with a traceback, although nothing is wrong: what was
    applied is recorded, and the next start replays the rest. Waiting for the running batch
    to end avoids the interruption; when a batch runs too long, the interruption is expected,
    and py4j's error line about it is left out.
    """
    deadline = time.monotonic() + patience_s
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    py4j = logging.getLogger("py4j.clientserver")
    level = py4j.level
    py4j.setLevel(logging.CRITICAL)
    try:
        query.stop()
    finally:
        py4j.setLevel(level)


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
    observed = ConsumerObservability(
        config.topic,
        endpoints.kafka_bootstrap,
        config.consumer_metrics_address,
        endpoints.redis_url,
    ).start()
    if observed.url:
        logger.info("metrics and health at %s (/metrics, /healthz, /readyz)", observed.url)
    stop = threading.Event()
    stop_on_signals(stop)
    deadline = threading.Timer(duration_s or 0, stop.set)
    if duration_s is not None:
        deadline.start()
    outage = Outage(
        endpoints.redis_url,
        config.topic,
        report=lambda ongoing: observed.outage(ongoing, retried=ongoing),
    )
    probe = BrokerProbe(endpoints.kafka_bootstrap, outage)
    claim, lost = ConsumerClaim(config.topic), list[Holder]()

    def taken_over(holder: Holder) -> None:  # from the heartbeat's thread
        lost.append(holder)
        stop.set()

    heartbeat: Heartbeat | None = None
    group = (
        GroupOffsets(endpoints.kafka_bootstrap, config.topic, config.commit_group)
        if config.commit_group
        else None
    )
    try:
        if not until_done(lambda: _claim(claim, endpoints.redis_url, observed), outage, stop,
                          TRANSIENT_FAULTS):  # fmt: skip
            return
        heartbeat = Heartbeat(
            endpoints.redis_url,
            CONSUMER,
            config.topic,
            library=library_name(),
            claim=claim,
            lost=taken_over,
        ).start()
        store = until_done(
            lambda: _prepared_store(endpoints.redis_url), outage, stop, TRANSIENT_FAULTS
        )
        partitions = config.topic_partitions if config.create_topic else 0
        if store is None or not await_topic(
            endpoints.kafka_bootstrap, config.topic, stop, partitions
        ):
            return
        probe.start()
        timer = RetractionTimer(
            store, config.expiration_offset_ms, config.topic, durability=Durability.of(config)
        )
        if until_done(timer.start, outage, stop, TRANSIENT_FAULTS) is None and stop.is_set():
            return
        spark = build_spark_session(spark_config, infra_config, "collection-manager-consumer")
        config = config.with_checkpoint(infra_config)
        while not stop.is_set():
            try:
                query = start_consumer(
                    spark,
                    config,
                    endpoints.kafka_bootstrap,
                    endpoints.redis_url,
                    replica_namespace=replica_namespace,
                    batch_done=_batch_done(observed, group),
                    replicas_refused=observed.replicas_refused,
                )
                logger.info(
                    "consuming %s from %s into %s",
                    config.topic,
                    endpoints.kafka_bootstrap,
                    redact_url(endpoints.redis_url),
                )
                if ready is not None:
                    ready(observed.url)
                    ready = None  # once: a query restarted after an outage is no news
                watch(
                    query, stop, None, endpoints.redis_url, timer, outage.recovered,
                    outage, config.trigger_interval_ms, config.topic, observed,
                )  # fmt: skip
            except TRANSIENT_FAULTS as exc:
                stop.wait(outage.failed(fault_text(exc)))
    finally:
        deadline.cancel()
        probe.stop()
        if heartbeat is not None:
            heartbeat.stop()
        observed.close()
        if group is not None:
            group.close()
    if lost:
        raise ClaimLostError(config.topic, lost[0], claim.expiry_s)


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


def _prepared_store(redis_url: str) -> StoreWriter:
    client = connected_client(redis_url)
    # This version's functions, beside those of other versions (docs/concepts/upgrades.md).
    install(client)
    store = StoreWriter(client)
    ensure_introspection_collections(store.catalog)
    store.finish_deletes()  # one a stopped consumer left half done becomes readable now
    return store
