"""The pipeline on replicated services: three KRaft brokers (replication factor 3, min ISR
2) and a Redis Cluster of three primaries with two replicas each, the consumer waiting for
one replica's copy of each batch (CM_REDIS_REPLICA_ACKS=1) before it records progress.

Under load (producers, a fleet of agents and its controller, the consumer), one fault
after the other, each followed by a request published after it being applied and counted
in the progress record (the time that took is printed):

1. the broker leading the partition of a busy collection is SIGKILLed, then restarted;
2. that collection's Redis primary is SIGKILLed and a replica promoted, while a ``query``
   started right after the kill must answer within its timeout;
3. the new primary's replicas are cut off (SIGSTOP) while it takes writes it never sends
   them, it is SIGKILLed, and a replica that lacks those writes is promoted.

At the end Redis holds exactly the model of every request in Kafka and what every agent
published: nothing lost, nothing applied twice.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
from confluent_kafka.admin import AdminClient, NewTopic
from redis.crc import key_slot

from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.kafka_cluster import LocalKafkaCluster, start_kafka_cluster
from collection_manager.devservices.redis_cluster import (
    LocalRedisCluster,
    RedisNode,
    start_cluster,
)
from collection_manager.kafka.partitioning import java_partition
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.client import REDIS_FAULTS, redis_client
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.progress import ProgressRecord, progress_key
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from tests.integration.pipeline_run import PipelineRun, pipeline_under_load
from tests.integration.workload import (
    assert_caught_up_with_the_model,
    create_specs,
    random_request,
)
from tests.support import assert_eventually

PARTITIONS = 4
REPLICATED_CONSUMER = {
    "CM_REDIS_REPLICA_ACKS": "1",
    # Short, so that a batch held up by replicas cut off is tried again soon.
    "CM_REDIS_REPLICA_ACK_TIMEOUT_MS": "2000",
}


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalKafkaCluster]:
    found = start_kafka_cluster(tmp_path_factory.mktemp("kafka-cluster"))
    yield found
    found.stop()


@pytest.fixture(scope="module")
def redis_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    found = start_cluster(tmp_path_factory.mktemp("redis-replicated"), masters=3, replicas=2)
    yield found
    found.stop()


@pytest.fixture
def replicated_topic(brokers: LocalKafkaCluster, unique: str) -> str:
    """A request topic with the brokers' replication (factor 3, min ISR 2)."""
    name = f"t-{unique}"
    admin = AdminClient({"bootstrap.servers": brokers.bootstrap})
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS)])[name].result(30)
    brokers.wait_fully_replicated(name)
    return name


class Recovery:
    """Publishes one request after a fault and tells when the consumer recorded it done."""

    def __init__(self, bootstrap: str, topic: str, url: str, spec: CollectionSpec) -> None:
        self._producer = KafkaProducer(ProducerConfig(bootstrap, client_id="test-recovery"))
        self._progress = ProgressRecord(redis_client(url), topic)
        self._topic, self._spec = topic, spec
        self._rng = random.Random(7)

    def wait(self, fault: str, began: float) -> None:
        """Publishes now; returns once the progress record counts it; prints how long
        since ``began`` (the fault)."""
        request = random_request(self._spec, self._rng, producer=9)
        where: list[tuple[int, int]] = []
        self._producer.produce(
            self._topic,
            self._spec.name.encode(),
            encode_request(request),
            on_delivery=lambda err, msg: err or where.append((msg.partition(), msg.offset())),
        )
        assert self._producer.flush(60) == 0 and where, "the broker did not take it"
        partition, offset = where[0]
        assert_eventually(lambda: _at_least(self.recorded(partition), offset), 180, 0.2)
        print(f"\n{fault}: recovered (a request published after it applied and recorded) "
              f"{time.monotonic() - began:.1f} s after")  # fmt: skip

    def progress(self) -> dict[int, int]:
        """What the progress record counts as done, per partition."""
        return self._progress.read().offsets

    def recorded(self, partition: int) -> int:
        """The last offset of ``partition`` the progress record counts as done."""
        try:
            return self._progress.read().offsets.get(partition, -1)
        except REDIS_FAULTS as exc:
            raise AssertionError(f"Redis does not answer yet: {exc}") from exc

    def close(self) -> None:
        self._producer.close(30)


def _at_least(value: int, bound: int) -> None:
    assert value >= bound


def _slot(collection: str) -> int:
    return key_slot(CollectionKeys(collection).contents.encode())


def _query(redis_url: str, collection: str) -> subprocess.Popen[str]:
    """``query`` as a user types it: its default timeout rides through a failover."""
    return subprocess.Popen(
        [sys.executable, "-m", "collection_manager.cli.main", "collections", "query", collection,
         "--format", "json"],
        env={**os.environ, "CM_REDIS_URL": redis_url},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip


def _key_on(cluster: LocalRedisCluster, node: RedisNode) -> str:
    """A key of the test whose slot ``node`` serves."""
    ranges = cluster._slot_ranges()[node]
    for attempt in range(1_000_000):
        key = f"test-replicated:{{{attempt}}}"
        if any(low <= key_slot(key.encode()) <= high for low, high in ranges):
            return key
    raise AssertionError(f"no key found for {node.address}")


def _replicas(
    cluster: LocalRedisCluster, primary: RedisNode, count: int
) -> Callable[[], list[RedisNode]]:
    def synced() -> list[RedisNode]:
        found = cluster.replicas_of(primary)
        assert len(found) == count, f"{len(found)} of {count} replicas synced"
        return found

    return synced


REFUSAL = "replicas required (CM_REDIS_REPLICA_ACKS) confirmed"  # ReplicasBehindError


def _refused(log: str, before: int) -> None:
    assert log.count(REFUSAL) > before


# Slow: three brokers and a Redis Cluster of its own, about 85 s (make test-slow, which CI
# runs after make test).
@pytest.mark.slow
def test_losing_a_broker_or_a_redis_primary_loses_nothing(
    brokers: LocalKafkaCluster,
    redis_nodes: LocalRedisCluster,
    replicated_topic: str,
    unique: str,
    tmp_path: Path,
) -> None:
    topic = replicated_topic
    url = redis_nodes.every_node_url
    store = RedisStore.connect(url)
    specs = create_specs(store, unique)
    # A collection on another node than the consumer's progress record: the case where a
    # failover that loses writes keeps the progress that counts them (replication.py).
    progress_owner = redis_nodes.slot_owner(key_slot(progress_key(topic).encode()))
    busy = next(
        (s for s in specs if redis_nodes.slot_owner(_slot(s.name)) != progress_owner),
        specs[0],  # all three beside it (1 in 27): still a failover test
    )
    recovery = Recovery(brokers.bootstrap, topic, url, busy)
    with pipeline_under_load(
        brokers.bootstrap, url, topic, unique, specs, tmp_path, REPLICATED_CONSUMER
    ) as run:
        recovery.wait("start", time.monotonic())
        assert_eventually(run.fleet.leased, timeout=180, interval=0.5)

        # 1. The broker leading the busy collection's partition dies.
        leader = brokers.leader_of(topic, java_partition(busy.name.encode(), PARTITIONS))
        brokers.kill(leader)
        recovery.wait("broker SIGKILLed", time.monotonic())
        brokers.start(leader)
        brokers.wait_fully_replicated(topic)

        # 2. The Redis primary of that collection dies and a replica takes over; a read
        # started meanwhile answers within its default timeout.
        slot = _slot(busy.name)
        primary = redis_nodes.slot_owner(slot)
        redis_nodes.kill(primary)
        began = time.monotonic()
        reader = _query(url, busy.name)
        promoted = redis_nodes.wait_promoted(primary, slot)
        print(f"\nRedis failover: a replica serves the slot {time.monotonic() - began:.1f} s after")
        recovery.wait("Redis primary SIGKILLed", began)
        out, err = reader.communicate(timeout=90)
        assert reader.returncode == 0, err
        assert json.loads(out)["rows"], out
        redis_nodes.restart(primary)  # back as a replica of the promoted one

        # 3. The new primary takes writes its replicas never get, then dies.
        replicas = assert_eventually(_replicas(redis_nodes, promoted, 2), timeout=60)
        junk = _key_on(redis_nodes, promoted)
        refusals = run.consumer_log().count(REFUSAL)
        for replica in replicas:
            os.kill(replica.pid, signal.SIGSTOP)
        try:
            with redis.Redis(port=promoted.port) as direct:
                # Far more than the sockets between them hold (up to 36 MiB here): the
                # rest, and every write after it, stays in the primary (the consumer's
                # batch in flight among them, if it writes there after the junk).
                direct.set(junk, b"x" * (96 << 20))
            # The barrier refuses to record the batch that no replica confirmed: the
            # progress record stands still while the replicas are cut off.
            assert_eventually(lambda: _refused(run.consumer_log(), refusals), timeout=60)
            held = recovery.progress()
            refusals = run.consumer_log().count(REFUSAL)
            assert_eventually(lambda: _refused(run.consumer_log(), refusals), timeout=60)
            assert recovery.progress() == held
            redis_nodes.kill(promoted)
            began = time.monotonic()
        finally:
            for replica in replicas:
                os.kill(replica.pid, signal.SIGCONT)
        successor = redis_nodes.wait_promoted(promoted, slot)
        with redis.Redis(port=successor.port) as direct:
            # It lacks what the primary acknowledged: the junk, and all written after it.
            assert not direct.exists(junk), "the promoted replica lost nothing"
        recovery.wait("Redis primary SIGKILLed, its last writes lost", began)
        redis_nodes.restart(promoted)

        _assert_nothing_lost_nothing_twice(run, store, brokers.bootstrap, topic, specs)
    recovery.close()


@pytest.mark.slow
def test_a_rolling_restart_of_every_broker_loses_nothing(
    brokers: LocalKafkaCluster,
    redis_nodes: LocalRedisCluster,
    replicated_topic: str,
    unique: str,
    tmp_path: Path,
) -> None:
    """Each broker in turn stopped (SIGTERM: it hands its leaderships over) and started
    again, under load, the next only once the topic is in sync on all three."""
    topic = replicated_topic
    url = redis_nodes.every_node_url
    store = RedisStore.connect(url)
    specs = create_specs(store, unique)
    recovery = Recovery(brokers.bootstrap, topic, url, specs[0])
    with pipeline_under_load(
        brokers.bootstrap, url, topic, unique, specs, tmp_path, REPLICATED_CONSUMER
    ) as run:
        recovery.wait("start", time.monotonic())
        rolling = time.monotonic()
        for node in brokers.nodes:
            began = time.monotonic()
            brokers.stop(node)
            brokers.start(node)
            brokers.wait_fully_replicated(topic)
            recovery.wait(f"broker {node.node_id} restarted", began)
        print(
            f"\nrolling restart of {len(brokers.nodes)} brokers: {time.monotonic() - rolling:.1f} s"
        )
        _assert_nothing_lost_nothing_twice(run, store, brokers.bootstrap, topic, specs)
    recovery.close()


def _assert_nothing_lost_nothing_twice(
    run: PipelineRun, store: RedisStore, bootstrap: str, topic: str, specs: list[CollectionSpec]
) -> None:
    """Once producing stops: Redis holds what every agent published and the model of every
    request in the topic."""
    run.stop_producing()
    assert_eventually(lambda: run.fleet.assert_redis_holds_what_the_agents_report(store), 180)
    assert_caught_up_with_the_model(
        bootstrap, topic, specs + run.fleet.specs, store, run.consumer, run.consumer_log,
        run.fleet.refreshed(),
    )  # fmt: skip
