"""Leases in log time and replica namespaces, on real Kafka, Redis and Spark
(docs/concepts/leases-and-retention.md).

- The consumer (a ``consume`` process) is SIGSTOPped for longer than the TTL while agents
  heartbeat and the controller checks and ticks: nobody is removed. An agent SIGKILLed
  during the pause is removed after the consumer resumed, once its partition's log time
  passed its last heartbeat plus the TTL.
- Two deployments with their own namespaces on one Redis use the same replica ids: neither
  removes, nor keeps alive, the other's replicas.
"""

from __future__ import annotations

import dataclasses
import math
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.config import ReplicaConfig
from collection_manager.control import metrics
from collection_manager.control.controller import Controller
from collection_manager.control.members import ACTIVE, REMOVED
from collection_manager.storage.replicas import ReplicaRecord
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_specs
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.test_replicas import (  # noqa: F401 (fixtures)
    TIMEOUT,
    _agent,
    _assert_rows_everywhere,
    _kill,
    _lease_loop,
    _leased,
    _removed_for_its_lease,
    _renewed_after,
    _replica_env,
    _start_agent_process,
    collections,
    consumer,
    controller,
    replica_config,
)
from tests.support import assert_eventually


@pytest.fixture
def dead_topic(kafka: str, topic: str) -> Iterator[str]:
    admin = AdminClient({"bootstrap.servers": kafka})
    name = f"{topic}-dead"
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    yield name
    admin.delete_topics([name])[name].result(30)


def _least_lease_left() -> float | None:
    """The controller's gauge, as its ``/metrics`` would serve it (seconds)."""
    return metrics.REGISTRY.get_sample_value("cm_controller_lease_left_min_seconds")


def _active(made: Controller, replica_id: str) -> bool:
    member = made.member(replica_id)
    return member is not None and member.state == ACTIVE


def test_a_stopped_consumer_expires_nobody_and_a_silent_replica_goes_in_log_time(
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    topic: str,
    dead_topic: str,
    controller: Controller,  # noqa: F811
    collections: list[str],  # noqa: F811
    replica_config: ReplicaConfig,  # noqa: F811
    unique: str,
    tmp_path: Path,
) -> None:
    store = RedisStore(redis)
    ttl_s = replica_config.replica_ttl_ms / 1000
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    env["CM_REPLICA_NAMESPACE"] = replica_config.replica_namespace
    process = start_consumer(env, tmp_path / "consumer.log")
    agent_env = _replica_env(kafka, endpoints.redis_url, topic, replica_config, tmp_path)
    alive, doomed = f"alive-{unique}", f"doomed-{unique}"
    agents = {r: _start_agent_process(r, agent_env, tmp_path / f"{r}.log") for r in (alive, doomed)}
    try:
        for replica_id in agents:
            assert_eventually(
                lambda r=replica_id: _assert_rows_everywhere(store, collections, r), TIMEOUT
            )
        with _lease_loop(controller):
            for replica_id in agents:
                first = assert_eventually(lambda r=replica_id: _leased(controller, r), TIMEOUT)
                assert_eventually(
                    lambda r=replica_id, f=first: _renewed_after(controller, r, f), TIMEOUT
                )

            os.killpg(process.pid, signal.SIGSTOP)
            try:
                _kill(agents[doomed])
                # Heartbeats and ticks go on reaching Kafka; none is applied for 2.5 TTLs.
                paused_until = time.monotonic() + 2.5 * ttl_s
                while time.monotonic() < paused_until:
                    assert _active(controller, alive) and _active(controller, doomed)
                    # Log time stands still, and so does the least lease left: never 0.
                    assert 0 < (_least_lease_left() or 0) < math.inf
                    time.sleep(0.2)
            finally:
                os.killpg(process.pid, signal.SIGCONT)

            assert_eventually(lambda: _removed_for_its_lease(controller, doomed), TIMEOUT)
            # Removed only once its partition's log time passed its last heartbeat + TTL.
            snapshot = ReplicaRecord(redis, replica_config.replica_namespace).snapshot(topic)
            last = snapshot.sightings[doomed]
            assert last.sent_at is not None and last.partition >= 0
            log_time = snapshot.log_times[last.partition]
            assert log_time - last.sent_at >= replica_config.replica_ttl_ms
            # The living one was renewed by the heartbeats applied after the pause.
            resumed = _leased(controller, alive)
            assert_eventually(lambda: _renewed_after(controller, alive, resumed), TIMEOUT)
            assert _active(controller, alive)
        assert process.poll() is None
    finally:
        for agent in agents.values():
            if agent.poll() is None:
                _kill(agent)
        if process.poll() is None:
            kill(process)


@dataclasses.dataclass
class Deployment:
    """One deployment: its namespace and collections, a ``consume`` process, a controller."""

    config: ReplicaConfig
    controller: Controller
    process: subprocess.Popen[bytes]


@pytest.fixture
def second(
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    replica_config: ReplicaConfig,  # noqa: F811
    unique: str,
    tmp_path: Path,
) -> Iterator[Deployment]:
    """A second deployment on the same Redis: its own topic, namespace and collections.

    Its consumer is a ``consume`` process (one SparkSession runs one query of that name).
    """
    admin = AdminClient({"bootstrap.servers": kafka})
    topic = f"t2-{unique}"
    futures = admin.create_topics([NewTopic(topic, 4, 1), NewTopic(f"{topic}-dead", 1, 1)])
    for future in futures.values():
        future.result(30)
    config = dataclasses.replace(
        replica_config,
        collection_suffix=f"-2-{unique}",
        replica_namespace=f"{replica_config.replica_namespace}:second",
    )
    store = RedisStore(redis)
    names = [spec.name + config.collection_suffix for spec in introspection_specs()]
    for spec, name in zip(introspection_specs(), names, strict=True):
        store.create_collection(dataclasses.replace(spec, name=name))
    made = Controller.connect(kafka, endpoints.redis_url, topic, config)
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path / "second")
    env["CM_REPLICA_NAMESPACE"] = config.replica_namespace
    process = start_consumer(env, tmp_path / "second-consumer.log")
    try:
        yield Deployment(config, made, process)
    finally:
        if process.poll() is None:
            kill(process)
        made.close()
        for name in names:
            store.drop_collection(name)
        keys = list(redis.scan_iter(match=f"{config.replica_namespace}:*"))
        if keys:
            redis.delete(*keys)
        for future in admin.delete_topics([topic, f"{topic}-dead"]).values():
            future.result(30)


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_two_namespaces_with_the_same_replica_ids_leave_each_other_alone(
    kafka: str,
    redis: redis_lib.Redis,
    consumer: Any,  # noqa: F811
    controller: Controller,  # noqa: F811
    collections: list[str],  # noqa: F811
    second: Deployment,
    unique: str,
) -> None:
    replica_id = f"shared-{unique}"
    first_agent = _agent(replica_id, controller, kafka, max_steps=2)
    second_agent = _agent(replica_id, second.controller, kafka, max_steps=2)
    ttl_s = controller.config.replica_ttl_ms / 1000
    try:
        first_agent.start(controller.add_replica(replica_id))
        second_agent.start(second.controller.add_replica(replica_id))
        with _lease_loop(controller), _lease_loop(second.controller):
            for made in (controller, second.controller):
                first = assert_eventually(lambda c=made: _leased(c, replica_id), TIMEOUT)
                assert_eventually(lambda c=made, f=first: _renewed_after(c, replica_id, f), TIMEOUT)
            # The second deployment's replica stops; the first's heartbeats must not keep
            # it alive, and its removal must not touch the first's replica.
            second_agent.stop("test silences it")
            second_agent.join(30)
            assert_eventually(
                lambda: _removed_for_its_lease(second.controller, replica_id), TIMEOUT
            )
            quiet_until = time.monotonic() + 2 * ttl_s
            while time.monotonic() < quiet_until:
                assert _active(controller, replica_id)
                time.sleep(0.2)
            member = controller.member(replica_id)
            assert member is not None and (member.epoch, member.state) == (1, ACTIVE)
            second_member = second.controller.member(replica_id)
            assert second_member is not None and second_member.state == REMOVED
            assert not first_agent.stopped
        assert consumer.isActive and second.process.poll() is None
    finally:
        for agent in (first_agent, second_agent):
            agent.stop("test over")
            agent.join(30)
