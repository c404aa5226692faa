"""A Redis Cluster on loopback: ``redis-server`` nodes with ``cluster-enabled yes``.

For tests and benchmarks of the pipeline on a cluster (``CM_REDIS_URL`` naming any node).
Each node has its own free loopback port, directory, AOF and ``nodes.conf``; ``redis-cli
--cluster create`` spreads the 16384 slots over the masters, and ``reshard`` moves slots
between them while clients run (keys migrate, clients follow MOVED and ASK); those
``redis-cli`` runs are ``redis_cli.py``'s.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.processes import (
    LOOPBACK,
    free_port,
    pid_alive,
    start_process,
    stop_pid,
    wait_until_ready,
)
from collection_manager.devservices.redis_cli import redis_cli
from collection_manager.devservices.redis_server import redis_answers, require_redis_server


@dataclasses.dataclass(frozen=True)
class RedisNode:
    """One ``redis-server`` of the cluster."""

    pid: int
    port: int
    log: Path
    command: tuple[str, ...] = ()

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    def stop(self) -> None:
        stop_pid(self.pid)


@dataclasses.dataclass
class LocalRedisCluster:
    """A running cluster; ``url`` names its first node (clients discover the others)."""

    nodes: list[RedisNode]

    @property
    def url(self) -> str:
        return f"redis://{self.nodes[0].address}/0"

    @property
    def every_node_url(self) -> str:
        """The URL naming every node: a client starts from any that answers."""
        return "redis://" + ",".join(node.address for node in self.nodes) + "/0"

    def node_id(self, node: RedisNode) -> str:
        """The cluster's id of ``node`` (``CLUSTER MYID``)."""
        return redis_cli("-p", str(node.port), "cluster", "myid").strip()

    def reshard(self, source: RedisNode, target: RedisNode, slots: int) -> None:
        """Moves ``slots`` slots with their keys from ``source`` to ``target`` (MIGRATE)."""
        redis_cli(
            "--cluster", "reshard", self.nodes[0].address,
            "--cluster-from", self.node_id(source),
            "--cluster-to", self.node_id(target),
            "--cluster-slots", str(slots),
            "--cluster-yes",
            timeout_s=300,
        )  # fmt: skip

    # A slot moved by hand, step by step as redis-cli does it (the Redis Cluster
    # specification's resharding protocol), so a test can act between the steps.

    def begin_migration(self, slot: int, source: RedisNode, target: RedisNode) -> None:
        """Marks ``slot`` importing on ``target`` and migrating on ``source``."""
        _node_command(target, "CLUSTER", "SETSLOT", slot, "IMPORTING", self.node_id(source))
        _node_command(source, "CLUSTER", "SETSLOT", slot, "MIGRATING", self.node_id(target))

    def migrate_keys(self, source: RedisNode, target: RedisNode, keys: Sequence[str]) -> None:
        """Moves ``keys`` (of a migrating slot) from ``source`` to ``target``."""
        _node_command(source, "MIGRATE", LOOPBACK, target.port, "", 0, 5000, "KEYS", *keys)

    def end_migration(self, slot: int, target: RedisNode) -> None:
        """Gives ``slot`` to ``target`` on every node (its keys must have moved)."""
        for node in sorted(self.nodes, key=lambda n: n != target):  # the target first
            _node_command(node, "CLUSTER", "SETSLOT", slot, "NODE", self.node_id(target))

    def keys_in_slot(self, node: RedisNode, slot: int) -> list[str]:
        """The keys of ``slot`` that ``node`` holds."""
        found = _node_command(node, "CLUSTER", "GETKEYSINSLOT", slot, 100_000)
        return [key.decode() for key in found]

    def slot_owner(self, slot: int) -> RedisNode:
        """The master that serves ``slot`` now."""
        for node, ranges in self._slot_ranges().items():
            if any(low <= slot <= high for low, high in ranges):
                return node
        raise InfrastructureError(f"no node of the cluster serves slot {slot}")

    def first_slot(self, node: RedisNode) -> int:
        """The lowest slot ``node`` serves: the one ``reshard`` moves first from it."""
        return min(low for low, _high in self._slot_ranges()[node])

    def _slot_ranges(self) -> dict[RedisNode, list[tuple[int, int]]]:
        """Each master's slot ranges, from ``CLUSTER NODES`` (``low-high`` or one slot)."""
        by_port = {node.port: node for node in self.nodes}
        ranges: dict[RedisNode, list[tuple[int, int]]] = {}
        for fields in self._node_lines():
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            for part in fields[8:]:
                if part[0].isdigit():  # not "[slot-<-importing]" while one migrates
                    low, _, high = part.partition("-")
                    ranges.setdefault(by_port[port], []).append((int(low), int(high or low)))
        return ranges

    # Replicas and failover: a primary killed, its replica promoted by the cluster.

    def primaries(self) -> list[RedisNode]:
        """The live nodes that are primaries now."""
        return [node for node, role in self._roles().items() if role[0] == "master"]

    def replicas_of(self, primary: RedisNode) -> list[RedisNode]:
        """The live replicas of ``primary`` whose link to it is up."""
        primary_id = self.node_id(primary)
        return [
            node
            for node, (role, of) in self._roles().items()
            if role == "slave"
            and of == primary_id
            and _node_command(node, "INFO", "replication").get("master_link_status") == "up"
        ]

    def kill(self, node: RedisNode) -> None:
        """SIGKILLs ``node``: whatever it had not sent its replicas yet is lost."""
        os.kill(node.pid, signal.SIGKILL)
        stop_pid(node.pid)  # reaps it

    def restart(self, node: RedisNode, timeout_s: float = 60.0) -> RedisNode:
        """Starts a killed ``node`` again on its port and directory (its ``nodes.conf``
        makes it rejoin; a former primary comes back as a replica); returns its record."""
        again = _run_node(list(node.command), node.port, node.log, timeout_s)
        self.nodes[self.nodes.index(node)] = again
        return again

    def wait_promoted(self, lost: RedisNode, slot: int, timeout_s: float = 60.0) -> RedisNode:
        """Waits until another node than ``lost`` serves ``slot`` and the live nodes agree
        the cluster is ok; returns the promoted node."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            live = [n for n in self.nodes if n != lost and pid_alive(n.pid)]
            with contextlib.suppress(InfrastructureError, StopIteration):
                owner = self.slot_owner(slot)
                if owner != lost and all(cluster_ok(n) for n in live):
                    return owner
            time.sleep(0.1)
        raise InfrastructureError(f"no replica took over from {lost.address} in {timeout_s} s")

    def _roles(self) -> dict[RedisNode, tuple[str, str]]:
        """Each live node's role (``master`` or ``slave``) and, of a replica, its primary's
        id, as a live node's ``CLUSTER NODES`` says."""
        by_port = {node.port: node for node in self.nodes}
        roles: dict[RedisNode, tuple[str, str]] = {}
        for fields in self._node_lines():
            node = by_port[int(fields[1].split("@")[0].rsplit(":", 1)[1])]
            flags = fields[2].split(",")
            if "fail" not in flags and "fail?" not in flags and pid_alive(node.pid):
                roles[node] = ("master" if "master" in flags else "slave", fields[3])
        return roles

    def _node_lines(self) -> list[list[str]]:
        """``CLUSTER NODES`` of the first live node, split into fields."""
        for node in self.nodes:
            if pid_alive(node.pid):
                with contextlib.suppress(InfrastructureError):
                    text = redis_cli("-p", str(node.port), "cluster", "nodes")
                    return [line.split() for line in text.splitlines()]
        raise InfrastructureError("no node of the cluster answers")

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_cluster(
    state_dir: Path, masters: int = 3, timeout_s: float = 60.0, replicas: int = 0
) -> LocalRedisCluster:
    """``masters`` nodes sharing the slots evenly, each with ``replicas`` replicas; stopped
    again on failure."""
    cluster = LocalRedisCluster([])
    try:
        for index in range(masters * (1 + replicas)):
            cluster.nodes.append(_start_node(state_dir / f"node-{index}", timeout_s))
        create_cluster([n.address for n in cluster.nodes], replicas, timeout_s)
        wait_until_ready(
            "redis cluster",
            cluster.nodes[0].pid,
            cluster.nodes[0].log,
            lambda: replicas_synced(cluster, masters),
            timeout_s,
            stop_on_timeout=False,
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def create_cluster(addresses: Sequence[str], replicas: int, timeout_s: float) -> None:
    """Makes one cluster of the nodes at ``addresses`` (``redis-cli --cluster create``):
    the first ``len / (1 + replicas)`` become the primaries, sharing the slots evenly."""
    redis_cli(
        "--cluster", "create", *addresses,
        "--cluster-replicas", str(replicas), "--cluster-yes",
        timeout_s=timeout_s,
    )  # fmt: skip


def replicas_synced(cluster: LocalRedisCluster, masters: int) -> bool:
    """Whether every node says the cluster is ok, they agree on ``masters`` primaries, and
    every replica has finished its first sync with its primary."""
    if not all(cluster_ok(n) for n in cluster.nodes):
        return False
    roles = cluster._roles()
    if sum(role == "master" for role, _ in roles.values()) != masters:
        return False
    for node, (role, _) in roles.items():
        if role == "slave":
            info = _node_command(node, "INFO", "replication")
            if info.get("master_link_status") != "up":
                return False
    return True


def _start_node(home: Path, timeout_s: float) -> RedisNode:
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    # The bus port is chosen too: the default, port + 10000, may be taken or too high.
    cmd = node_command(home, port, free_port())
    return _run_node(cmd, port, home / "redis.log", timeout_s)


def node_command(home: Path, port: int, bus_port: int, *more: str) -> list[str]:
    """The command line of a cluster node on ``port`` with its data in ``home``;
    ``more``: further ``redis-server`` options."""
    return [
        require_redis_server(),
        "--bind", LOOPBACK, "--port", str(port), "--dir", str(home),
        "--cluster-enabled", "yes", "--cluster-port", str(bus_port),
        "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", "5000",
        # A replica takes over however long it was cut off: the consumer's replication
        # barrier (storage/replication.py), not the replica's age, bounds what is lost.
        "--cluster-replica-validity-factor", "0",
        # Replicas stay with their primary (no migration to one left without): a test that
        # cuts off every replica of a primary knows which they are, and every primary
        # keeps the replicas CM_REDIS_REPLICA_ACKS counts on.
        "--cluster-allow-replica-migration", "no",
        "--appendonly", "yes", "--save", "", "--daemonize", "no",
        *more,
    ]  # fmt: skip


def _run_node(cmd: list[str], port: int, log: Path, timeout_s: float) -> RedisNode:
    pid = start_process(cmd, log, cwd=log.parent)
    url = f"redis://{LOOPBACK}:{port}/0"
    wait_until_ready("redis-server", pid, log, lambda: redis_answers(url), timeout_s)
    return RedisNode(pid, port, log, tuple(cmd))


def _node_command(node: RedisNode, *command: Any) -> Any:
    """``command`` sent to one node alone (no redirection followed)."""
    with redis.Redis(host=LOOPBACK, port=node.port, socket_timeout=30) as client:
        return client.execute_command(*command)


def cluster_ok(node: RedisNode) -> bool:
    try:
        return "cluster_state:ok" in redis_cli("-p", str(node.port), "cluster", "info")
    except InfrastructureError:
        return False
