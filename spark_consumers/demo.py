"""The demonstration: requests through Kafka, Spark and Redis, read back and verified.

A simulated replica publishes its introspection snapshot and some changes as Avro
requests (confluent-kafka); the Spark consumer reads them with Spark's Kafka source and
applies them to Redis; the demo then reads the collections back, prints them, and checks
them against what the replica holds. It starts what is not running and stops what it
started.
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

from collection_manager import infra
from collection_manager.config import ConsumerConfig, InfraConfig, SparkConfig, from_env
from collection_manager.errors import ConsumerError
from collection_manager.filters import eq
from collection_manager.requests import Append, Delete, Request
from collection_manager.specs import Row
from collection_manager.storage.store import RedisStore
from producers.kafka_producer import KafkaProducer, ProducerConfig
from producers.simulated import SimulatedReplica, apply_updates
from schemas.codec import encode_request
from spark_consumers.job import start_consumer
from spark_consumers.run import ensure_introspection_collections
from spark_consumers.session import build_spark_session

logger = logging.getLogger(__name__)

REPLICA = "demo-r1"


@dataclass(frozen=True)
class DemoResult:
    """What the demo saw: per collection, rows in Redis vs rows the replica holds."""

    stored: dict[str, Counter[Row]]
    expected: dict[str, Counter[Row]]

    @property
    def verified(self) -> bool:
        """Whether Redis holds exactly what the replica holds."""
        return self.stored == self.expected


def _replica_requests(steps: int, seed: int) -> tuple[list[Request], dict[str, Counter[Row]]]:
    """The replica's requests (a delete of its old rows, snapshot, steps) and its state."""
    replica = SimulatedReplica(workers=2, dataflows=2, seed=seed)
    requests: list[Request] = []
    expected: dict[str, Counter[Row]] = {}
    for batch in [replica.snapshot()] + [replica.step() for _ in range(steps)]:
        for collection, updates in batch.items():
            rows = tuple(((REPLICA, *row), diff) for row, diff in updates)
            requests.append(Append(collection, REPLICA, 1, rows, int(time.time() * 1000)))
            apply_updates(expected.setdefault(collection, Counter()), rows)
    # Earlier demo runs left rows of this replica: retract them first (a delete by index).
    resets: list[Request] = [Delete(c, eq("replica_id", REPLICA), "demo restart") for c in expected]
    return resets + requests, expected


def _publish(bootstrap: str, topic: str, requests: list[Request]) -> None:
    producer = KafkaProducer(ProducerConfig(bootstrap, client_id="collection-manager-demo"))
    for request in requests:
        key = request.collection if isinstance(request, Append | Delete) else REPLICA
        producer.produce(topic, key.encode(), encode_request(request))
    if producer.close(30):
        raise RuntimeError("the demo's requests were not all acknowledged")


def _stored(store: RedisStore, collections: list[str]) -> dict[str, Counter[Row]]:
    return {c: Counter(store.snapshot(c, eq("replica_id", REPLICA)).rows) for c in collections}


def run_demo(timeout_s: float = 120.0, steps: int = 5) -> DemoResult:
    """Runs the round trip and returns what it saw."""
    infra_config = from_env(InfraConfig)
    endpoints = infra.up(infra_config)
    try:
        config = from_env(ConsumerConfig).with_checkpoint(infra_config, query="demo")
        store = RedisStore.connect(endpoints.redis_url)
        ensure_introspection_collections(store)
        requests, expected = _replica_requests(steps, seed=int(time.time()))
        _publish(endpoints.kafka_bootstrap, config.topic, requests)
        spark = build_spark_session(from_env(SparkConfig), infra_config, "collection-manager-demo")
        query = start_consumer(spark, config, endpoints.kafka_bootstrap, endpoints.redis_url)
        try:
            stored = _wait_for(store, expected, query, timeout_s)
        finally:
            query.stop()  # the session stays: a caller (or a test) may share it
        return DemoResult(stored, expected)
    finally:
        infra.down(infra_config, endpoints.started)


def _wait_for(
    store: RedisStore, expected: dict[str, Counter[Row]], query: Any, timeout_s: float
) -> dict[str, Counter[Row]]:
    """What Redis holds once it matches ``expected`` or ``timeout_s`` passed."""
    deadline = time.monotonic() + timeout_s
    while True:
        stored = _stored(store, list(expected))
        if stored == expected or time.monotonic() >= deadline:
            return stored
        if query.exception() is not None:
            raise ConsumerError(f"the consumer failed: {query.exception()}")
        time.sleep(0.5)
