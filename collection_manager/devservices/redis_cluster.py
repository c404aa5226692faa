"""A Redis Cluster on loopback: ``redis-server`` nodes with ``cluster-enabled yes``.

For tests and benchmarks of the pipeline on a cluster (``CM_REDIS_URL`` naming any node).
Each node has its own free loopback port, directory, AOF and ``nodes.conf``; ``redis-cli
--cluster create`` spreads the 16384 slots over the masters, and ``reshard`` moves slots
between them while clients run (keys migrate, clients follow MOVED and ASK).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import redis

from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.processes import (
    LOOPBACK,
    free_port,
    start_process,
    stop_pid,
    wait_until_ready,
)
from collection_manager.devservices.redis_server import redis_answers, require_redis_server


@dataclasses.dataclass(frozen=True)
class RedisNode:
    """One ``redis-server`` of the cluster."""

    pid: int
    port: int
    log: Path

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

    def node_id(self, node: RedisNode) -> str:
        """The cluster's id of ``node`` (``CLUSTER MYID``)."""
        return _cli("-p", str(node.port), "cluster", "myid").strip()

    def reshard(self, source: RedisNode, target: RedisNode, slots: int) -> None:
        """Moves ``slots`` slots with their keys from ``source`` to ``target`` (MIGRATE)."""
        _cli(
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
        for line in _cli("-p", str(self.nodes[0].port), "cluster", "nodes").splitlines():
            fields = line.split()
            port = int(fields[1].split("@")[0].rsplit(":", 1)[1])
            for part in fields[8:]:
                if part[0].isdigit():  # not "[slot-<-importing]" while one migrates
                    low, _, high = part.partition("-")
                    ranges.setdefault(by_port[port], []).append((int(low), int(high or low)))
        return ranges

    def stop(self) -> None:
        for node in self.nodes:
            node.stop()


def start_cluster(state_dir: Path, masters: int = 3, timeout_s: float = 60.0) -> LocalRedisCluster:
    """``masters`` nodes (no replicas) sharing the slots evenly; stopped again on failure."""
    cluster = LocalRedisCluster([])
    try:
        for index in range(masters):
            cluster.nodes.append(_start_node(state_dir / f"node-{index}", timeout_s))
        _cli(
            "--cluster", "create", *(n.address for n in cluster.nodes),
            "--cluster-replicas", "0", "--cluster-yes",
            timeout_s=timeout_s,
        )  # fmt: skip
        wait_until_ready(
            "redis cluster",
            cluster.nodes[0].pid,
            cluster.nodes[0].log,
            lambda: all(_cluster_ok(n) for n in cluster.nodes),
            timeout_s,
            stop_on_timeout=False,
        )
    except BaseException:
        cluster.stop()
        raise
    return cluster


def _start_node(home: Path, timeout_s: float) -> RedisNode:
    home.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = home / "redis.log"
    cmd = [
        require_redis_server(),
        "--bind", LOOPBACK, "--port", str(port), "--dir", str(home),
        # The bus port is chosen too: the default, port + 10000, may be taken or too high.
        "--cluster-enabled", "yes", "--cluster-port", str(free_port()),
        "--cluster-config-file", "nodes.conf",
        "--cluster-node-timeout", "5000",
        "--appendonly", "yes", "--save", "", "--daemonize", "no",
    ]  # fmt: skip
    pid = start_process(cmd, log, cwd=home)
    url = f"redis://{LOOPBACK}:{port}/0"
    wait_until_ready("redis-server", pid, log, lambda: redis_answers(url), timeout_s)
    return RedisNode(pid, port, log)


def _node_command(node: RedisNode, *command: Any) -> Any:
    """``command`` sent to one node alone (no redirection followed)."""
    with redis.Redis(host=LOOPBACK, port=node.port, socket_timeout=30) as client:
        return client.execute_command(*command)


def _cluster_ok(node: RedisNode) -> bool:
    try:
        return "cluster_state:ok" in _cli("-p", str(node.port), "cluster", "info")
    except InfrastructureError:
        return False


def _cli(*args: str, timeout_s: float = 30.0) -> str:
    binary = shutil.which("redis-cli")
    if binary is None:
        raise InfrastructureError("redis-cli was not found (Debian: apt-get install redis-tools)")
    done = subprocess.run(
        [binary, "-h", LOOPBACK, *args], capture_output=True, text=True, timeout=timeout_s
    )
    if done.returncode != 0:
        raise InfrastructureError(f"redis-cli {' '.join(args[:3])} failed: {done.stderr[-500:]}")
    return done.stdout
