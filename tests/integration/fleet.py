"""Replica agents and a controller around a fault test: the fleet an outage must not harm.

The agents run in this process (their published state is what Redis must hold at the end);
the controller checks leases in a thread of its own. Every key of the fleet lives under a
namespace and in collections of this test only.
"""

from __future__ import annotations

import dataclasses
import threading
from collections import Counter
from typing import Any

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.control.leases import Lease
from collection_manager.control.members import ACTIVE
from collection_manager.core.filters import eq
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import redis_client
from collection_manager.storage.replicas import ReplicaRecord
from collection_manager.storage.store import RedisStore
from producers.agent import TTL_COLLECTIONS, ReplicaAgent
from producers.agent_config import AgentConfig
from schemas.introspection import introspection_specs

# Leases far shorter than the outages the tests inject, so an outage that expired anybody
# would show; heartbeats and lease checks often enough to renew many times per TTL.
TTL_MS = 4_000
# The agents' rows keep their TTL (each step refreshes it, as in production), but one long
# enough that none expires during a test: the model the tests compare with never expires a
# row, and an agent starved on a loaded machine for half a short TTL stops itself (its rows
# then expire and differ from the model). Expiry itself is tested in test_row_ttl.py and
# test_store_ttl.py, against a model with a clock.
ROW_TTL_MS = 600_000


def replica_config(unique: str) -> ReplicaConfig:
    """Leases, heartbeats and names of the fleet of test ``unique``."""
    return ReplicaConfig(
        replica_ttl_ms=TTL_MS,
        row_ttl_ms=ROW_TTL_MS,
        heartbeat_interval_ms=300,
        lease_check_interval_ms=200,
        step_interval_ms=250,
        publish_batch_rows=100,
        collection_suffix=f"-fleet-{unique}",
        replica_namespace=f"cm:replicas:{unique}",
    )


@dataclasses.dataclass
class Fleet:
    """Agents that publish for ``max_steps`` steps (then only heartbeat) and a controller."""

    controller: Controller
    agents: list[ReplicaAgent]
    specs: list[CollectionSpec]
    granted: dict[str, int]  # replica id -> tick time of the lease add_replica granted
    _record: ReplicaRecord
    _stop: threading.Event
    _loop: threading.Thread

    @classmethod
    def start(cls, kafka: str, redis_url: str, topic: str, unique: str, max_steps: int) -> Fleet:
        """Creates the fleet's collections, starts the lease loop and two agents."""
        config = replica_config(unique)
        store = RedisStore.connect(redis_url)
        specs = [
            dataclasses.replace(spec, name=spec.name + config.collection_suffix)
            for spec in introspection_specs()
        ]
        for spec in specs:
            store.create_collection(spec)
        controller = Controller.connect(kafka, redis_url, topic, config)
        stop = threading.Event()
        loop = threading.Thread(target=controller.run_leases, args=(stop,), name="lease-loop")
        loop.start()
        agents, granted = [], {}
        for i in range(2):
            replica_id = f"a{i}-{unique}"
            settings: dict[str, Any] = {"workers": 2, "dataflows": 2, "max_steps": max_steps}
            agent_config = AgentConfig.of(config, kafka, topic, **settings)
            agent = ReplicaAgent(replica_id, agent_config, still_member=controller.is_current)
            agent.start(controller.add_replica(replica_id))
            lease = controller.lease(replica_id)
            assert lease is not None
            agents.append(agent)
            granted[replica_id] = lease.renewed_at
        client = redis_client(redis_url, socket_connect_timeout=5, socket_timeout=5)
        record = ReplicaRecord(client, config.replica_namespace)
        return cls(controller, agents, specs, granted, record, stop, loop)

    def leased(self) -> dict[str, Lease]:
        """Every agent's lease, once each was renewed by a heartbeat the consumer applied."""
        leases = {}
        for agent in self.agents:
            lease = self.controller.lease(agent.replica_id)
            assert lease is not None and lease.partition is not None, agent.replica_id
            assert lease.renewed_at > self.granted[agent.replica_id]
            leases[agent.replica_id] = lease
        return leases

    def assert_nobody_removed(self) -> None:
        """Every agent still runs as the active first incarnation of its replica."""
        for agent in self.agents:
            assert not agent.stopped, f"{agent.replica_id} stopped: {agent.reason}"
            member = self.controller.member(agent.replica_id)
            assert member is not None, agent.replica_id
            assert (member.epoch, member.state) == (1, ACTIVE), member

    def stopped(self) -> dict[str, str | None]:
        """The agents that stopped, with why: their rows then expire (a TTL), which the
        model of a test never does."""
        return {agent.replica_id: agent.reason for agent in self.agents if agent.stopped}

    def assert_renewed_since(self, before: dict[str, Lease]) -> None:
        """Each agent's lease was renewed after ``before`` (heartbeats flow again)."""
        for agent in self.agents:
            lease = self.controller.lease(agent.replica_id)
            assert lease is not None and lease.renewed_at > before[agent.replica_id].renewed_at

    def refreshed(self) -> set[str]:
        """The fleet's collections whose rows the agents keep refreshing (a TTL)."""
        suffix = self.controller.config.collection_suffix
        return {s.name for s in self.specs if s.name.removesuffix(suffix) in TTL_COLLECTIONS}

    def assert_redis_holds_what_the_agents_report(self, store: RedisStore) -> None:
        """Once every agent published its last step: Redis holds exactly each one's rows."""
        for agent in self.agents:
            assert agent.settled, f"{agent.replica_id} still publishing"
            mine = eq("replica_id", agent.replica_id)
            stored = {
                spec.name: Counter(store.snapshot(spec.name, mine).rows) for spec in self.specs
            }
            assert stored == agent.state(), agent.replica_id

    def log_time_reached(self, wall_ms: int) -> None:
        """The consumer applied, in every partition, a tick the controller sent at
        ``wall_ms`` or later: it reads and applies what was sent after that moment."""
        times = self._record.snapshot(self.controller.topic).log_times
        assert len(times) == 4 and min(times.values()) >= wall_ms, times

    def stop(self) -> None:
        """Stops the agents (without removing them) and the lease loop."""
        for agent in self.agents:
            agent.stop("test over")
        for agent in self.agents:
            agent.join(30)
        self._stop.set()
        self._loop.join(30)
        self.controller.close()
