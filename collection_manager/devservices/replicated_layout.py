"""The shape of ``infra up --replicated`` and what a user must set to use it (no I/O here
but reading and writing the layout file).

Three KRaft brokers, each a broker and a controller, and a Redis Cluster of three primaries
with two replicas each, on loopback (docs/howto/deploy-replicated.md).
Their ports are chosen once, when the deployment is first made, and kept in
``<state dir>/replicated/layout.json``: the brokers' controller quorum and the Redis nodes'
``nodes.conf`` name each other's ports, so a node started again must get the same ones.
"""

from __future__ import annotations

import dataclasses
import json
import urllib.parse
from collections.abc import Callable, Mapping
from pathlib import Path

from collection_manager.config import InfraConfig, env_name, redact_url
from collection_manager.config.errors import UsageError
from collection_manager.devservices.processes import LOOPBACK

BROKERS = 3
PRIMARIES = 3
REPLICAS_PER_PRIMARY = 2
REDIS_NODES = PRIMARIES * (1 + REPLICAS_PER_PRIMARY)
# What the consumer, the controller and the agents must set (docs/howto/deploy-replicated.md):
# before anything counts as done, one replica of every primary holds it.
REPLICA_ACKS = 1


@dataclasses.dataclass(frozen=True)
class Node:
    """One process of the deployment.

    Attributes:
        name: its record's name in the state file: ``kafka-1``, ``redis-4``.
        port: where clients connect.
        peer_port: the broker's controller listener, or the Redis node's cluster bus.
    """

    name: str
    port: int
    peer_port: int

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def is_broker(self) -> bool:
        return self.name.startswith("kafka-")


@dataclasses.dataclass(frozen=True)
class Layout:
    """The brokers and Redis nodes, in order (the first three Redis nodes are created as
    the primaries; failovers may change that later)."""

    brokers: tuple[Node, ...]
    redis: tuple[Node, ...]
    # Kept so that a broker whose storage is formatted again joins the same cluster.
    kafka_cluster_id: str

    @property
    def nodes(self) -> tuple[Node, ...]:
        return self.brokers + self.redis

    @property
    def bootstrap(self) -> str:
        """``CM_KAFKA_BOOTSTRAP``: every broker, so a client starts while one is down."""
        return ",".join(node.address for node in self.brokers)

    @property
    def redis_url(self) -> str:
        """``CM_REDIS_URL``: every node; a client starts from the first that answers."""
        return "redis://" + ",".join(node.address for node in self.redis) + "/0"

    @property
    def voters(self) -> str:
        """The brokers' controller quorum, ``id@host:port,...``."""
        return ",".join(
            f"{index}@{LOOPBACK}:{node.peer_port}" for index, node in enumerate(self.brokers, 1)
        )

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self), indent=2)

    @classmethod
    def from_json(cls, text: str) -> Layout:
        raw = json.loads(text)
        return cls(
            tuple(Node(**fields) for fields in raw["brokers"]),
            tuple(Node(**fields) for fields in raw["redis"]),
            raw["kafka_cluster_id"],
        )

    @classmethod
    def plan(cls, free_port: Callable[[], int], kafka_cluster_id: str) -> Layout:
        """A new layout on ports ``free_port`` gives, no port twice."""
        ports: list[int] = []
        while len(ports) < 2 * (BROKERS + REDIS_NODES):
            port = free_port()
            if port not in ports:
                ports.append(port)
        pairs = iter(zip(ports[::2], ports[1::2], strict=True))
        brokers = tuple(Node(f"kafka-{i}", *next(pairs)) for i in range(1, BROKERS + 1))
        redis = tuple(Node(f"redis-{i}", *next(pairs)) for i in range(1, REDIS_NODES + 1))
        return cls(brokers, redis, kafka_cluster_id)


def layout_dir(state_dir: Path) -> Path:
    """Where the deployment keeps its layout and each node's data and log."""
    return state_dir / "replicated"


def load_layout(state_dir: Path) -> Layout | None:
    """The deployment's layout, or None before it was first made."""
    try:
        return Layout.from_json((layout_dir(state_dir) / "layout.json").read_text())
    except FileNotFoundError:
        return None


def save_layout(state_dir: Path, layout: Layout) -> None:
    path = layout_dir(state_dir) / "layout.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(layout.to_json())
    tmp.replace(path)


def is_replicated(name: str) -> bool:
    """Whether a record of the state file is a node of the replicated deployment."""
    prefix, _, number = name.partition("-")
    return prefix in ("kafka", "redis") and number.isdigit()


def settings(layout: Layout) -> dict[str, str]:
    """What every process that uses the deployment must have in its environment."""
    return {
        env_name("kafka_bootstrap"): layout.bootstrap,
        env_name("redis_url"): layout.redis_url,
        env_name("redis_replica_acks"): str(REPLICA_ACKS),
    }


def check_combination(
    config: InfraConfig, layout: Layout | None, environ: Mapping[str, str]
) -> None:
    """Refuses settings that do not fit ``infra up --replicated``, in one line.

    ``layout``: the existing deployment's, or None when there is none yet (then any
    configured address is another service's).

    Raises:
        UsageError: naming the setting and what to do.
    """
    brokers = {n.address for n in layout.brokers} if layout else set()
    nodes = {n.address for n in layout.redis} if layout else set()
    if config.kafka_bootstrap and not _names_only(config.kafka_bootstrap.split(","), brokers):
        raise UsageError(
            f"CM_KAFKA_BOOTSTRAP={config.kafka_bootstrap} names a broker that is not one of "
            "--replicated's own: it starts its three brokers itself; unset CM_KAFKA_BOOTSTRAP "
            "(or use `infra up` without --replicated for the configured one)"
        )
    if config.redis_url and not _names_only(_redis_hosts(config.redis_url), nodes):
        raise UsageError(
            f"CM_REDIS_URL={redact_url(config.redis_url)} names a Redis that is not one of "
            "--replicated's own nodes: it "
            "starts its Redis Cluster itself; unset CM_REDIS_URL (or use `infra up` without "
            "--replicated for the configured one)"
        )
    for field in ("kafka_port", "redis_port"):
        if getattr(config, field):
            raise UsageError(
                f"{env_name(field)} sets the port of `infra up`'s single {field[:5]}; "
                "--replicated picks free ports for its nodes: unset it"
            )
    acks = environ.get(env_name("redis_replica_acks"), "")
    if acks.strip().isdigit() and int(acks) > REPLICAS_PER_PRIMARY:
        raise UsageError(
            f"CM_REDIS_REPLICA_ACKS={acks.strip()}: --replicated gives each primary "
            f"{REPLICAS_PER_PRIMARY} replicas, so no batch would ever be confirmed; "
            f"set it to {REPLICA_ACKS}"
        )


def _names_only(addresses: list[str], ours: set[str]) -> bool:
    named = {address.strip() for address in addresses if address.strip()}
    return bool(named) and named <= ours


def _redis_hosts(url: str) -> list[str]:
    """The ``host:port`` of every node a Redis URL names (``redis://a:1,b:2/0``)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    if parts.scheme != "redis":  # TLS or a socket: never one of the local nodes
        return []
    return parts.netloc.rpartition("@")[2].split(",")
