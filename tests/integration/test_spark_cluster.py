"""The consumer on a real Spark standalone cluster whose workers have nothing installed.

A Master and two one-core Workers run on loopback from the Spark that pyspark ships, with a
bare environment: their own Python lacks this project and its dependencies. The consumer,
started unchanged with ``CM_SPARK_MASTER=spark://...``, ships its packed environment to the
executors (``spark_consumers/executor_env.py``). Mid-run a Worker is SIGKILLed with its
executor and a new one joins; the final contents and counters must equal the model's.
"""

from __future__ import annotations

import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.spark_cluster import SparkCluster, bare_env, start_cluster
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.workload import (
    applying,
    assert_caught_up_with_the_model,
    produce_until,
)
from tests.support import assert_eventually


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[SparkCluster]:
    started = start_cluster(tmp_path / "spark", workers=2)
    yield started
    started.stop()


def _unpacked(cluster: SparkCluster) -> list[Path]:
    """The shipped environments unpacked in the Workers' executor directories."""
    return [
        env
        for worker in cluster.workers
        for env in (worker.log.parent / "work").glob("app-*/*/cm_env")
    ]


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_the_consumer_runs_on_a_cluster_that_lacks_the_project_and_survives_a_lost_worker(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    topic: str,
    tmp_path: Path,
    workload_specs: list[CollectionSpec],
    cluster: SparkCluster,
) -> None:
    # The Workers' own Python cannot import the product: only what Spark ships can run it.
    bare = bare_env(tmp_path)
    probe = ["python3", "-c", "import collection_manager, redis, fastavro"]
    assert subprocess.run(probe, env=bare, cwd=tmp_path, capture_output=True).returncode != 0

    env = dict(
        consumer_env(kafka, endpoints.redis_url, topic, tmp_path), CM_SPARK_MASTER=cluster.url
    )
    store, stop, specs = RedisStore(redis), threading.Event(), workload_specs
    producers = [
        threading.Thread(target=produce_until, args=(kafka, topic, specs, p, stop))
        for p in range(2)
    ]
    for thread in producers:
        thread.start()
    running = applying(store, specs)
    log = tmp_path / "consumer.log"
    consumer = start_consumer(env, log)
    try:
        assert_eventually(running, timeout=240)
        assert _unpacked(cluster), "no executor ran the shipped environment"
        cluster.workers[0].kill()  # with its executor and Python workers, mid-batch
        cluster.add_worker()
        assert_eventually(running, timeout=240)
        stop.set()
        for thread in producers:
            thread.join(60)
        assert_caught_up_with_the_model(kafka, topic, specs, store, consumer, log.read_text)
    finally:
        stop.set()
        if consumer.poll() is None:
            kill(consumer)
