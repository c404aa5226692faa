"""The nemesis's schedule (``tests/model/nemesis.py``) injected into a
running deployment: one thread per lane, each fault healed, and its service whole again,
before the lane's next (the module's docstring there says why that keeps every service
within what it survives).

A lane stops at the deadline, but not before it went through each of its kinds once.
"""

from __future__ import annotations

import os
import signal
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator

import redis
from redis.crc import key_slot

from collection_manager.devservices.redis_cluster import RedisNode
from tests.integration.chaos_deployment import Deployment
from tests.integration.chaos_services import Services
from tests.model import nemesis
from tests.model.nemesis import Fault

# More than the sockets between a primary and its cut-off replicas hold (up to 36 MiB
# here, test_replicated.py): what the primary takes after it stays its own.
JUNK_BYTES = 96 << 20
PROMOTION_TIMEOUT_S = 120.0


class Nemesis:
    """Injects the faults of ``seed`` into ``services`` and ``deployment``."""

    def __init__(self, services: Services, deployment: Deployment, seed: int) -> None:
        self.services, self.deployment, self.seed = services, deployment, seed
        self.survived: Counter[str] = Counter()  # injected and healed, by kind
        self.notes: Counter[str] = Counter()  # what the faults caused, or why one was skipped
        self.errors: list[str] = []  # a fault that could not be injected or healed
        self.timeline: list[str] = []
        self._halt = threading.Event()
        self._began = time.monotonic()
        self._inject: dict[str, Callable[[Fault], str | None]] = {
            nemesis.CONSUMER_KILL: self._consumer_kill,
            nemesis.CONTROLLER_KILL: self._controller_kill,
            nemesis.AGENT_KILL: self._agent_kill,
            nemesis.BROKER_KILL: self._broker_kill,
            nemesis.BROKER_PAUSE: self._broker_pause,
            nemesis.REDIS_PRIMARY_KILL: self._redis_primary_kill,
            nemesis.REDIS_NODE_PAUSE: self._redis_node_pause,
            nemesis.REDIS_LOST_TAIL: self._redis_lost_tail,
            nemesis.REPLICA_REMOVE: self._replica_remove,
            nemesis.REPLICA_ADD: self._replica_add,
            nemesis.REPLICA_READD: self._replica_readd,
        }

    def run(self, seconds: float) -> None:
        """Runs every lane for ``seconds`` (each at least one round); returns once each
        lane healed its last fault."""
        self._began = time.monotonic()
        deadline = self._began + seconds
        lanes = {lane: nemesis.faults(self.seed, lane) for lane in nemesis.LANES}
        lanes[nemesis.MEMBERSHIP] = nemesis.membership(self.seed)
        threads = [
            threading.Thread(
                target=self._lane,
                args=(lane, schedule, deadline, len(nemesis.LANES.get(lane, ()))),
                name=f"nemesis-{lane}",
            )
            for lane, schedule in lanes.items()
        ]
        for thread in threads:
            thread.start()
        try:
            for thread in threads:
                thread.join()
        finally:
            self._halt.set()  # an interrupted run: every lane heals and returns at once
            for thread in threads:
                thread.join()

    def _lane(self, lane: str, schedule: Iterator[Fault], deadline: float, round_: int) -> None:
        for done, fault in enumerate(schedule):
            if self._halt.is_set() or (done >= round_ and time.monotonic() >= deadline):
                return
            began = time.monotonic()
            try:
                target = self._inject[fault.kind](fault)
            except Exception as exc:
                self.errors.append(f"{lane}: {fault.kind}: {exc!r}\n{traceback.format_exc()}")
                return
            if target is None:
                self.notes[f"{fault.kind}: skipped, no target"] += 1
            else:
                self.survived[fault.kind] += 1
                self._say(
                    f"{fault.kind} of {target} (held {fault.hold_s} s, healed "
                    f"{time.monotonic() - began:.1f} s after)"
                )
            if self._halt.wait(fault.gap_s):
                return

    def _say(self, line: str) -> None:
        line = f"{time.monotonic() - self._began:7.1f} s  {line}"
        self.timeline.append(line)
        print(line, flush=True)

    def _hold(self, fault: Fault) -> None:
        self._halt.wait(fault.hold_s)

    # Processes

    def _consumer_kill(self, fault: Fault) -> str:
        self.deployment.kill_consumer()
        self._hold(fault)
        self.deployment.start_consumer()
        return "the consumer"

    def _controller_kill(self, fault: Fault) -> str:
        self.deployment.kill_controller()
        self._hold(fault)
        self.deployment.start_controller()
        return "the controller"

    def _agent_kill(self, fault: Fault) -> str | None:
        ids = self.deployment.live_ids()
        if not ids or not self.deployment.kill_agent(target := fault.target(ids)):
            return None
        self._hold(fault)
        self.deployment.restart_agent(target)  # a new incarnation
        return target

    # Kafka

    def _broker_kill(self, fault: Fault) -> str:
        self.services.wait_kafka_in_sync()
        node = fault.target(self.services.brokers.nodes)
        self.services.brokers.kill(node)
        self._hold(fault)
        self.services.brokers.start(node)
        self.services.wait_kafka_in_sync()
        return f"broker {node.node_id}"

    def _broker_pause(self, fault: Fault) -> str:
        self.services.wait_kafka_in_sync()
        node = fault.target(self.services.brokers.nodes)
        os.kill(node.pid, signal.SIGSTOP)
        try:
            self._hold(fault)
        finally:
            os.kill(node.pid, signal.SIGCONT)
        self.services.wait_kafka_in_sync()
        return f"broker {node.node_id}"

    # Redis

    def _primaries(self) -> list[RedisNode]:
        return sorted(self.services.redis.primaries(), key=lambda node: node.port)

    def _redis_primary_kill(self, fault: Fault) -> str:
        self.services.wait_redis_whole()
        cluster = self.services.redis
        primary = fault.target(self._primaries())
        slot = cluster.first_slot(primary)
        cluster.kill(primary)
        cluster.wait_promoted(primary, slot, PROMOTION_TIMEOUT_S)
        self._hold(fault)
        cluster.restart(primary)  # back as a replica of the promoted one
        self.services.wait_redis_whole()
        return f"primary :{primary.port}"

    def _redis_node_pause(self, fault: Fault) -> str:
        self.services.wait_redis_whole()
        cluster = self.services.redis
        node = fault.target(sorted(cluster.nodes, key=lambda n: n.port))
        slot = cluster.first_slot(node) if node in cluster.primaries() else None
        os.kill(node.pid, signal.SIGSTOP)
        try:
            self._hold(fault)
        finally:
            os.kill(node.pid, signal.SIGCONT)
        self.services.wait_redis_whole()
        if slot is not None and cluster.slot_owner(slot) != node:
            self.notes["a paused primary failed over (past the node timeout)"] += 1
        role = "replica" if slot is None else "primary"
        return f"{role} :{node.port}"

    def _redis_lost_tail(self, fault: Fault) -> str:
        """Both replicas of a primary cut off (SIGSTOP), the primary takes a write they
        cannot get and whatever the consumer and controller write after it, then dies;
        continued, a replica without those writes is promoted (test_replicated.py)."""
        self.services.wait_redis_whole()
        cluster = self.services.redis
        primary = fault.target(self._primaries())
        slot = cluster.first_slot(primary)
        replicas = cluster.replicas_of(primary)
        junk = _key_in_slot(slot)
        for replica in replicas:
            os.kill(replica.pid, signal.SIGSTOP)
        try:
            with redis.Redis(port=primary.port, socket_timeout=60) as direct:
                direct.set(junk, b"x" * JUNK_BYTES)
            self._hold(fault)  # writes go on into the primary alone
            cluster.kill(primary)
        finally:
            for replica in replicas:
                os.kill(replica.pid, signal.SIGCONT)
        successor = cluster.wait_promoted(primary, slot, PROMOTION_TIMEOUT_S)
        with redis.Redis(port=successor.port, socket_timeout=60) as direct:
            kept = direct.exists(junk)
            direct.delete(junk)  # kept only when the tail was not lost after all
        self.notes["failover lost the tail" if not kept else "failover kept the tail"] += 1
        cluster.restart(primary)
        self.services.wait_redis_whole()
        return f"primary :{primary.port}"

    # Membership

    def _replica_remove(self, fault: Fault) -> str | None:
        ids = self.deployment.live_ids()
        if self.deployment.replica_count() <= nemesis.MIN_AGENTS or not ids:
            return None
        target = fault.target(ids)
        return target if self.deployment.retire(target) else None

    def _replica_add(self, fault: Fault) -> str | None:
        if self.deployment.replica_count() >= nemesis.MAX_AGENTS:
            return None
        return self.deployment.add_agent()

    def _replica_readd(self, fault: Fault) -> str | None:
        retired = sorted(self.deployment.retired)
        if self.deployment.replica_count() >= nemesis.MAX_AGENTS or not retired:
            return None
        return self.deployment.add_agent(fault.target(retired))


def _key_in_slot(slot: int) -> str:
    """A key of the run's own in ``slot``."""
    for attempt in range(1_000_000):
        key = f"chaos-junk:{{{attempt}}}"
        if key_slot(key.encode()) == slot:
            return key
    raise AssertionError(f"no key found for slot {slot}")
