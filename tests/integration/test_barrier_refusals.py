"""The consumer says why the replicas' barrier refuses its batches (docs/operations.md, Faults).

On a Redis Cluster with a replica per primary and ``CM_REDIS_REPLICA_ACKS=1``, every replica
is cut off (SIGSTOP) while requests keep coming: each batch the barrier refuses is one line,
``batch N not recorded as done: only 0 of the 1 replicas required ...``, and one count of
``cm_consumer_replica_refusals_total``; no socket timeout or traceback reaches the log. Once
the replicas are back, every request is applied, each once.
"""

from __future__ import annotations

import os
import re
import signal
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.processes import free_port
from collection_manager.devservices.redis_cluster import LocalRedisCluster, start_cluster
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.support import SIZES_SCHEMA, assert_eventually

REFUSAL = re.compile(
    r"batch \d+ not recorded as done: only 0 of the 1 replicas required "
    r"\(CM_REDIS_REPLICA_ACKS\) confirmed the writes of the Redis primary at \S+ within "
    r"1000 ms \(CM_REDIS_REPLICA_ACK_TIMEOUT_MS\)"
)
BARRIER = {"CM_REDIS_REPLICA_ACKS": "1", "CM_REDIS_REPLICA_ACK_TIMEOUT_MS": "1000"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    found = start_cluster(tmp_path_factory.mktemp("redis-barrier"), masters=3, replicas=1)
    yield found
    found.stop()


def _refusals_counted(metrics_at: str, topic: str) -> float:
    with urllib.request.urlopen(f"http://{metrics_at}/metrics", timeout=5) as reply:
        text = reply.read().decode()
    name = f'cm_consumer_replica_refusals_total{{topic="{topic}"}}'
    found = [line.split()[-1] for line in text.splitlines() if line.startswith(name)]
    assert found, f"{name} is not exported"
    return float(found[0])


def test_each_refused_batch_is_one_line_and_one_count_and_nothing_is_lost(
    cluster: LocalRedisCluster, kafka: str, topic: str, unique: str, tmp_path: Path
) -> None:
    url = cluster.every_node_url
    store = RedisStore.connect(url)
    spec = CollectionSpec(f"barrier-{unique}", SIZES_SCHEMA, ())
    store.create_collection(spec)
    metrics_at = f"127.0.0.1:{free_port()}"
    env = consumer_env(kafka, url, topic, tmp_path) | BARRIER
    env["CM_CONSUMER_METRICS_ADDRESS"] = metrics_at
    log = tmp_path / "consumer.log"
    producer = KafkaProducer(ProducerConfig(kafka))
    rows: dict[tuple[str, int, None], int] = {}

    def send(count: int) -> None:
        for _ in range(count):
            row = ("r1", len(rows), None)
            rows[row] = 1
            append = Append(spec.name, "w", 1, ((row, 1),), produced_at=0)
            producer.produce(topic, spec.name.encode(), encode_request(append))
        producer.flush()

    def applied() -> None:
        assert consumer.poll() is None, log.read_text()[-3000:]
        assert store.snapshot(spec.name).rows == rows, log.read_text()[-3000:]

    consumer = start_consumer(env, log)
    replicas = [node for primary in cluster.primaries() for node in cluster.replicas_of(primary)]
    try:
        send(20)
        assert_eventually(applied, timeout=120, interval=0.5)
        for replica in replicas:
            os.kill(replica.pid, signal.SIGSTOP)
        try:
            send(20)

            def refused_and_counted() -> None:
                assert consumer.poll() is None, log.read_text()[-3000:]
                lines = REFUSAL.findall(log.read_text())
                assert len(lines) >= 2, log.read_text()[-3000:]
                assert _refusals_counted(metrics_at, topic) >= 2

            assert_eventually(refused_and_counted, timeout=120, interval=0.5)
        finally:
            for replica in replicas:
                os.kill(replica.pid, signal.SIGCONT)
        send(20)
        assert_eventually(applied, timeout=180, interval=0.5)
        # One line per refused batch, each counted (the count read after the last line).
        assert _refusals_counted(metrics_at, topic) == len(REFUSAL.findall(log.read_text()))
        stats = store.stats(spec.name)
        assert stats.get("requests") == len(rows), stats  # each request applied once
    finally:
        kill(consumer)
        producer.close()
        store.drop_collection(spec.name)
    text = log.read_text()
    assert "Traceback" not in text and "TimeoutError" not in text, text[-3000:]
