"""Running the consumer as a process: start, watch, stop cleanly on SIGTERM/SIGINT."""

from __future__ import annotations

import json
import logging
import signal
import threading
import time
from types import FrameType
from typing import Any

from collection_manager.config import ConsumerConfig, SparkConfig, redact_url
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_specs
from spark_consumers.errors import ConsumerError
from spark_consumers.job import start_consumer
from spark_consumers.metrics import record_progress
from spark_consumers.retraction_timer import RetractionTimer
from spark_consumers.session import build_spark_session

logger = logging.getLogger(__name__)


def ensure_introspection_collections(store: RedisStore) -> None:
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
) -> None:
    """Waits until ``stop`` is set, ``duration_s`` passed or the query failed; then stops it.

    Stopping interrupts the running micro-batch between two atomic store calls: what was
    applied is recorded in the watermarks, and the restarted query replays the rest.

    Raises:
        ConsumerError: when the query stopped with an error.
    """
    deadline = None if duration_s is None else time.monotonic() + duration_s
    last_batch = None
    try:
        while not stop.is_set() and query.isActive:
            if deadline is not None and time.monotonic() >= deadline:
                break
            query.awaitTermination(0.5)
            if timer is not None:
                timer.tick()
            progress = _as_dict(query.lastProgress)
            if redis_url and progress and progress.get("batchId") != last_batch:
                last_batch = progress.get("batchId")
                record_progress(redis_url, progress)
    finally:
        query.stop()
    if query.exception() is not None:
        raise ConsumerError(f"the consumer's streaming query failed: {query.exception()}")


def run_consumer(
    config: ConsumerConfig,
    spark_config: SparkConfig,
    infra_config: Any,
    endpoints: Any,
    replica_namespace: str,
    duration_s: float | None = None,
) -> None:
    """Runs the consumer until SIGTERM/SIGINT (or ``duration_s``).

    Args:
        replica_namespace: the controller's key namespace (``CM_REPLICA_NAMESPACE``).
    """
    store = RedisStore.connect(endpoints.redis_url)
    ensure_introspection_collections(store)
    timer = RetractionTimer(store, config.expiration_offset_ms)
    timer.start()
    spark = build_spark_session(spark_config, infra_config, "collection-manager-consumer")
    stop = threading.Event()
    stop_on_signals(stop)
    config = config.with_checkpoint(infra_config)
    query = start_consumer(
        spark,
        config,
        endpoints.kafka_bootstrap,
        endpoints.redis_url,
        replica_namespace=replica_namespace,
    )
    logger.info(
        "consuming %s from %s into %s",
        config.topic,
        endpoints.kafka_bootstrap,
        redact_url(endpoints.redis_url),
    )
    watch(query, stop, duration_s, endpoints.redis_url, timer)
