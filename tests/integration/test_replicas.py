"""Replica agents and the controller on real Kafka, Redis and Spark, with the consumer running.

Each test has its own topic, its own copies of the introspection collections (suffix
``-<unique>``), its own controller key namespace and replica ids, so it can run beside
other tests on the same services.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.control.leases import Lease
from collection_manager.control.members import REMOVED
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from producers.agent import ReplicaAgent
from producers.agent_config import AgentConfig
from schemas.codec import encode_request
from schemas.introspection import introspection_specs
from tests.integration.spark_query import consumer_query
from tests.support import assert_eventually

# A bound on each wait (the consumer's Spark start the longest), never a pace: with two
# CPU burners beside make test, 90 s was too little once.
TIMEOUT = 240.0
# Also on the project's images in make test's container pass.
pytestmark = pytest.mark.containers


@pytest.fixture
def replica_config(unique: str) -> ReplicaConfig:
    return ReplicaConfig(
        replica_ttl_ms=4_000,
        heartbeat_interval_ms=300,
        lease_check_interval_ms=200,
        step_interval_ms=200,
        publish_batch_rows=100,
        collection_suffix=f"-{unique}",
        replica_namespace=f"cm:replicas:{unique}",
    )


@pytest.fixture
def collections(redis: redis_lib.Redis, replica_config: ReplicaConfig) -> Iterator[list[str]]:
    store = RedisStore(redis)
    names = []
    for spec in introspection_specs():
        name = spec.name + replica_config.collection_suffix
        store.create_collection(dataclasses.replace(spec, name=name))
        names.append(name)
    yield names
    for name in names:
        store.drop_collection(name)


@pytest.fixture
def consumer(
    spark: Any,
    kafka: str,
    endpoints: Any,
    topic: str,
    tmp_path: Path,
    collections: list[str],
    controller: Controller,
) -> Iterator[Any]:
    """The Spark consumer on the test's topic, stopped after the test.

    It depends on ``controller`` so it stops first: no sighting lands after the cleanup.
    """
    namespace = controller.config.replica_namespace
    with consumer_query(spark, kafka, endpoints.redis_url, topic, tmp_path, namespace) as query:
        yield query


@pytest.fixture
def controller(
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    topic: str,
    replica_config: ReplicaConfig,
) -> Iterator[Controller]:
    """A controller with the test's key namespace; its keys (sightings too) go afterwards."""
    made = Controller.connect(kafka, endpoints.redis_url, topic, replica_config)
    try:
        yield made
    finally:
        made.close()
        keys = list(redis.scan_iter(match=f"{replica_config.replica_namespace}:*"))
        if keys:
            redis.delete(*keys)


def _agent(replica_id: str, controller: Controller, kafka: str, **overrides: Any) -> ReplicaAgent:
    settings = {"workers": 2, "dataflows": 2, "max_steps": 3, **overrides}
    config = AgentConfig.of(controller.config, kafka, controller.topic, **settings)
    return ReplicaAgent(replica_id, config, still_member=controller.is_current)


def _stored(store: RedisStore, collections: list[str], replica_id: str) -> dict[str, Counter[Any]]:
    return {
        name: Counter(store.snapshot(name, eq("replica_id", replica_id)).rows)
        for name in collections
    }


def _assert_redis_holds(store: RedisStore, agent: ReplicaAgent, collections: list[str]) -> None:
    assert agent.settled
    assert _stored(store, collections, agent.replica_id) == agent.state()


def _assert_gone(store: RedisStore, collections: list[str], replica_id: str) -> None:
    assert _stored(store, collections, replica_id) == {name: Counter() for name in collections}


def _publish_late_append(
    kafka: str, topic: str, collection: str, replica_id: str, epoch: int
) -> None:
    """An append of a removed incarnation that was still on its way (a compute frontier)."""
    late = Append(collection, replica_id, epoch, [((replica_id, "late", 0, 1), 1)], 0)
    producer = KafkaProducer(ProducerConfig(kafka, client_id="late-append"))
    producer.produce(topic, collection.encode(), encode_request(late))
    assert producer.close(30) == 0


def test_removing_a_replica_retracts_its_rows_everywhere_and_fences_late_appends(
    kafka: str,
    redis: redis_lib.Redis,
    consumer: Any,
    controller: Controller,
    collections: list[str],
    unique: str,
) -> None:
    store = RedisStore(redis)
    agents = [_agent(f"r{i}-{unique}", controller, kafka) for i in range(3)]
    try:
        for agent in agents:
            agent.start(controller.add_replica(agent.replica_id))
        for agent in agents:
            assert_eventually(lambda a=agent: _assert_redis_holds(store, a, collections), TIMEOUT)
        _assert_rows_everywhere(store, collections, agents[0].replica_id)

        removed = agents[1]
        epoch = controller.remove_replica(removed.replica_id, "test removes it")
        assert epoch == 1

        assert_eventually(lambda: _assert_gone(store, collections, removed.replica_id), TIMEOUT)
        for agent in (agents[0], agents[2]):
            _assert_redis_holds(store, agent, collections)
        # The agent learns at its next heartbeat that it is no longer a member.
        assert removed.wait(TIMEOUT)
        member = controller.member(removed.replica_id)
        assert member is not None and member.state == REMOVED
        assert all(store.reader.fences(name)[removed.replica_id] == 1 for name in collections)

        frontiers = collections[0]
        fused_before = store.stats(frontiers).get("fused_appends", 0)
        _publish_late_append(kafka, controller.topic, frontiers, removed.replica_id, epoch)

        def fused() -> None:
            assert store.stats(frontiers).get("fused_appends", 0) == fused_before + 1

        assert_eventually(fused, TIMEOUT)
        _assert_gone(store, collections, removed.replica_id)
    finally:
        for agent in agents:
            agent.stop("test over")
        for agent in agents:
            agent.join(30)


def _replica_env(
    kafka: str, redis_url: str, topic: str, config: ReplicaConfig, tmp_path: Path
) -> dict[str, str]:
    return dict(
        os.environ,
        CM_KAFKA_BOOTSTRAP=kafka,
        CM_REDIS_URL=redis_url,
        CM_TOPIC=topic,
        CM_STATE_DIR=str(tmp_path / "state"),
        CM_COLLECTION_SUFFIX=config.collection_suffix,
        CM_REPLICA_NAMESPACE=config.replica_namespace,
        CM_REPLICA_TTL_MS=str(config.replica_ttl_ms),
        CM_HEARTBEAT_INTERVAL_MS=str(config.heartbeat_interval_ms),
        CM_STEP_INTERVAL_MS=str(config.step_interval_ms),
    )


def _start_agent_process(
    replica_id: str, env: dict[str, str], log: Path
) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "collection_manager.cli.main", "replicas", "run", "--id", replica_id,
        "--workers", "2", "--dataflows", "2", "--steps", "3", "--duration", "600",
    ]  # fmt: skip
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _assert_rows_everywhere(store: RedisStore, collections: list[str], replica_id: str) -> None:
    stored = _stored(store, collections, replica_id)
    # Error counts may be empty in a short simulated history; every other collection has rows.
    assert all(rows for name, rows in stored.items() if not name.startswith("error_counts"))


@contextlib.contextmanager
def _lease_loop(controller: Controller) -> Iterator[None]:
    """The controller's lease loop in a thread, stopped on leaving."""
    stop = threading.Event()
    loop = threading.Thread(target=controller.run_leases, args=(stop,))
    loop.start()
    try:
        yield
    finally:
        stop.set()
        loop.join(30)


def _leased(controller: Controller, replica_id: str) -> Lease:
    lease = controller.lease(replica_id)
    assert lease is not None
    return lease


def _renewed_after(controller: Controller, replica_id: str, first: Lease) -> None:
    """A heartbeat renewed the lease of epoch 1 since ``first``, and it is still a member."""
    lease, member = _leased(controller, replica_id), controller.member(replica_id)
    assert member is not None and (member.epoch, member.state) == (1, "active")
    assert lease.renewed_at > first.renewed_at


def _removed_for_its_lease(controller: Controller, replica_id: str) -> None:
    member = controller.member(replica_id)
    assert member is not None and member.state == REMOVED
    assert member.reason.startswith("lease expired")


def _kill(process: subprocess.Popen[bytes]) -> None:
    # The whole group: nothing of the agent may survive to say goodbye.
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def test_a_killed_agent_is_removed_when_its_lease_expires_and_comes_back_re_added(
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    consumer: Any,
    controller: Controller,
    collections: list[str],
    replica_config: ReplicaConfig,
    unique: str,
    tmp_path: Path,
) -> None:
    store = RedisStore(redis)
    replica_id = f"killed-{unique}"
    env = _replica_env(kafka, endpoints.redis_url, controller.topic, replica_config, tmp_path)
    process = _start_agent_process(replica_id, env, tmp_path / "agent.log")
    agent = _agent(replica_id, controller, kafka)
    try:
        assert_eventually(lambda: _assert_rows_everywhere(store, collections, replica_id), TIMEOUT)
        # Started once the consumer applies requests, so heartbeats can renew from the start.
        with _lease_loop(controller):
            first = assert_eventually(lambda: _leased(controller, replica_id), TIMEOUT)
            assert_eventually(lambda: _renewed_after(controller, replica_id, first), TIMEOUT)
            _kill(process)
            assert_eventually(lambda: _removed_for_its_lease(controller, replica_id), TIMEOUT)
            assert_eventually(lambda: _assert_gone(store, collections, replica_id), TIMEOUT)

            agent.start(controller.add_replica(replica_id))
            assert agent.epoch == 2
            assert_eventually(lambda: _assert_redis_holds(store, agent, collections), TIMEOUT)
            assert controller.is_current(replica_id, 2)
            assert all(store.reader.fences(name)[replica_id] == 1 for name in collections)
    finally:
        if process.poll() is None:
            _kill(process)
        agent.stop("test over")
        agent.join(30)
