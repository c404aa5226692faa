"""The streaming query: Spark's Kafka source -> per-partition ordered apply -> Redis.

Each Kafka partition is one Spark input partition read in offset order; they are coalesced
(concatenated, no shuffle) to one task per core, so the applier on the executors sees
every partition's requests in order, partition after partition, applies them through the
store's atomic, idempotent Redis function, and returns one small summary row per
collection; ``foreachBatch`` only collects those summaries (which runs the apply) and
records metrics on the driver.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from collection_manager.config import ConsumerConfig, InfraConfig, from_env
from collection_manager.config.errors import ConfigError
from collection_manager.kafka import security
from collection_manager.kafka.topics import admin_client
from collection_manager.storage.client import redis_client
from collection_manager.storage.replication import ReplicasBehindError
from spark_consumers.applier import SUMMARY_SCHEMA, ExecutorSettings, PartitionApplier
from spark_consumers.dead_letter_producer import dead_letter_max_bytes
from spark_consumers.errors import ConsumerError
from spark_consumers.metrics import BatchMetrics, record_batch
from spark_consumers.startup import DriverProgress, StartPlan, plan_start
from spark_consumers.steps import StepTimer

if TYPE_CHECKING:
    from confluent_kafka.admin import AdminClient
    from pyspark.sql import DataFrame, SparkSession
    from pyspark.sql.streaming import StreamingQuery

logger = logging.getLogger(__name__)

FETCH_MAX_WAIT_MS = 10  # the executors' Kafka consumers (see kafka_stream)
KAFKA_API_TIMEOUT_MS = 10_000  # the source's Kafka clients (see kafka_stream)
KAFKA_REQUEST_TIMEOUT_MS = 8_000


def kafka_stream(
    spark: SparkSession,
    config: ConsumerConfig,
    bootstrap: str,
    starting: str = "earliest",
    security: Mapping[str, str] | None = None,
) -> DataFrame:
    """The request topic as a streaming DataFrame of (topic, partition, offset, key, value,
    timestamp).

    Args:
        starting: Spark's ``startingOffsets``; it counts only for an empty checkpoint.
        security: Kafka TLS and SASL as ``kafka.``-prefixed source options
            (``collection_manager/kafka/security.py``).
    """
    reader = (
        spark.readStream.format("kafka")
        .options(**(security or {}))
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", config.topic)
        .option("startingOffsets", starting)
        .option("failOnDataLoss", str(config.fail_on_data_loss).lower())
        # With the default 500 ms, a batch's first tasks waited 120 to 500 ms for their
        # first records at light load (measured in the Python workers; most likely the
        # pooled consumer's fetch left in flight past the previous batch, which the
        # broker answers only when new records arrive or the wait ends). 10 ms halved
        # addBatch (bench/notes.md); the consumers fetch only while a task runs.
        .option("kafka.fetch.max.wait.ms", str(FETCH_MAX_WAIT_MS))
        # The driver's offset reader waited out the default 60 s when the leader of a
        # partition died: its admin client kept asking the dead broker and gave up only at
        # this timeout (a new one, on Spark's retry, found the new leader at once). A
        # request's own timeout must not be longer.
        .option("kafka.default.api.timeout.ms", str(KAFKA_API_TIMEOUT_MS))
        .option("kafka.request.timeout.ms", str(KAFKA_REQUEST_TIMEOUT_MS))
    )
    if config.max_offsets_per_trigger:
        reader = reader.option("maxOffsetsPerTrigger", config.max_offsets_per_trigger)
    # The timestamp (the producer's create time) measures publish-to-visible latency.
    return reader.load().select("topic", "partition", "offset", "key", "value", "timestamp")


def start_consumer(
    spark: SparkSession,
    config: ConsumerConfig,
    bootstrap: str,
    redis_url: str,
    *,
    replica_namespace: str,
    batch_done: Callable[[BatchMetrics, float], None] | None = None,
    replicas_refused: Callable[[], None] | None = None,
) -> StreamingQuery:
    """Starts the consumer where Redis's progress says (``spark_consumers/startup.py``).

    It resumes from ``config.checkpoint_dir`` unless Redis holds less progress than that
    checkpoint; then it starts a fresh checkpoint at Redis's progress.

    Args:
        replica_namespace: the controller's key namespace (``ReplicaConfig``), whose epoch
            counters decide which epochs are real (docs/concepts/epochs-and-fences.md).
        replicas_refused: told of each batch whose progress the replicas' barrier refused
            (``storage/replication.py``); the batch is logged in one line too.
        batch_done: told of each batch's metrics and its time on the driver (seconds).

    Raises:
        ConsumerError: when no checkpoint directory is set (see ``with_checkpoint``).
        ConfigError: when the replica acknowledgements asked for are out of bounds.
        ProgressMismatchError: when Redis's progress is of another Kafka cluster.
    """
    checkpoint_dir = _checked_checkpoint_dir(config)
    # Read once here, shipped to the executors: the dead-letter producer must accept
    # anything the request topic holds.
    max_bytes = dead_letter_max_bytes(bootstrap, config.topic, config.dead_letter_topic)
    admin = admin_client(bootstrap)
    plan = _planned_start(spark, checkpoint_dir, config.topic, admin, redis_url)
    applied = _applied(spark, config, bootstrap, redis_url, replica_namespace, max_bytes, plan)
    acks, ack_timeout_ms = config.redis_replica_acks, config.redis_replica_ack_timeout_ms
    driver = DriverProgress(redis_url, admin, config.topic, plan, acks, ack_timeout_ms)
    on_batch = _batch_handler(driver, redis_url, config.topic, batch_done, replicas_refused)
    return _started(applied, on_batch, checkpoint_dir, config.trigger_interval_ms)


def _checked_checkpoint_dir(config: ConsumerConfig) -> str:
    """The config's checkpoint directory, once the config is one the consumer can start with.

    Raises:
        ConsumerError: when no checkpoint directory is set (see ``with_checkpoint``).
        ConfigError: when the replica acknowledgements asked for are out of bounds.
    """
    if config.checkpoint_dir is None:
        raise ConsumerError("the consumer needs a checkpoint directory (with_checkpoint)")
    if config.redis_replica_acks < 0 or config.redis_replica_ack_timeout_ms < 1:
        raise ConfigError(
            "CM_REDIS_REPLICA_ACKS must be at least 0 and CM_REDIS_REPLICA_ACK_TIMEOUT_MS at "
            f"least 1 (got {config.redis_replica_acks} and "
            f"{config.redis_replica_ack_timeout_ms})"
        )
    return config.checkpoint_dir


def _planned_start(
    spark: SparkSession, checkpoint_dir: str, topic: str, admin: AdminClient, redis_url: str
) -> StartPlan:
    """Where the query starts (``spark_consumers/startup.py``), over a Redis client of its own."""
    client = redis_client(redis_url, socket_connect_timeout=5)
    try:
        return plan_start(spark, checkpoint_dir, topic, admin, client)
    finally:
        client.close()


def _applied(
    spark: SparkSession,
    config: ConsumerConfig,
    bootstrap: str,
    redis_url: str,
    replica_namespace: str,
    max_bytes: int,
    plan: StartPlan,
) -> DataFrame:
    """The request topic applied on the executors: one summary row per collection and task."""
    infra = from_env(InfraConfig)
    settings = ExecutorSettings.of(
        config,
        bootstrap,
        redis_url,
        max_bytes,
        replica_namespace,
        plan.redis_run_id,
        security.load(infra).settings,
    )
    stream = kafka_stream(
        spark, config, bootstrap, plan.starting_offsets, security.spark_options(infra)
    )
    # One task per core rather than one per Kafka partition: a batch's tasks then run in one
    # wave, and each task's fixed cost (the JVM handing it to a Python worker and back) is
    # paid once per core: with four partitions on two cores, a batch's collect went from
    # 163 to 122 ms at 10,000 updates/s (bench/batch_breakdown.py, before and after).
    # Coalescing concatenates partitions, so each keeps its order.
    tasks = spark.sparkContext.defaultParallelism
    # Adaptive execution does not apply to a stream; left on, Spark warns so at every start.
    spark.conf.set("spark.sql.adaptive.enabled", "false")
    applier = PartitionApplier(settings)
    return stream.coalesce(tasks).mapInPandas(applier, schema=SUMMARY_SCHEMA)


def _batch_handler(
    driver: DriverProgress,
    redis_url: str,
    topic: str,
    batch_done: Callable[[BatchMetrics, float], None] | None,
    replicas_refused: Callable[[], None] | None,
) -> Callable[[DataFrame, int], None]:
    """``foreachBatch``'s function: it runs the batch (``collect``), then records it."""

    def on_batch(summaries: DataFrame, batch_id: int) -> None:
        began = time.monotonic()
        timer = StepTimer()
        with timer.step("check"):
            driver.check()
        with timer.step("collect"):
            rows: list[Any] = summaries.collect()  # runs the apply on the executors
        try:
            driver.advance(rows, timer)
        except ReplicasBehindError as exc:
            # One line per refused batch, saying why progress stands still (the query
            # fails, and is started again as in an outage, whose line was said once).
            logger.warning("batch %d not recorded as done: %s", batch_id, exc)
            if replicas_refused is not None:
                replicas_refused()
            raise
        metrics = BatchMetrics.of(batch_id, rows)
        with timer.step("record"):
            record_batch(redis_url, topic, metrics)
        if batch_done is not None:
            batch_done(metrics.with_driver_steps(timer.micros), time.monotonic() - began)

    return on_batch


def _started(
    applied: DataFrame,
    on_batch: Callable[[DataFrame, int], None],
    checkpoint_dir: str,
    trigger_interval_ms: int,
) -> StreamingQuery:
    """The streaming query started: ``on_batch`` for each micro-batch of ``applied``."""
    return (
        applied.writeStream.foreachBatch(on_batch)
        .option("checkpointLocation", checkpoint_dir)
        .trigger(processingTime=f"{trigger_interval_ms} milliseconds")
        .queryName("collection-manager-consumer")
        .start()
    )
