"""``infra up --replicated``: three KRaft brokers and a Redis Cluster of three primaries
with two replicas each, as local processes recorded in the state file like ``infra up``'s.

A node whose recorded process runs is reused; one that does not is started again from its
directory on its layout's ports (its storage, its ``nodes.conf``), so ``down`` then ``up``
brings the same deployment back with its data. The settings are those the fault tests run
on (``kafka_cluster.py``, ``redis_cluster.py``), plus ``appendfsync always`` on every Redis
node: the consumer's progress record and a collection may sit on different nodes, and a
machine crash must not lose one's last second of writes while the other keeps it
(docs/concepts/requests-and-ordering.md, "Progress is Redis's").
"""

from __future__ import annotations

import contextlib
import functools
import shutil
from collections.abc import Callable
from pathlib import Path

from collection_manager.config import InfraConfig
from collection_manager.config.machine import require_java
from collection_manager.config.services import Service, is_running, start_time
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_broker import (
    broker_command,
    broker_jars,
    format_storage,
    kafka_answers,
    random_cluster_id,
)
from collection_manager.devservices.kafka_cluster import REPLICATED_PROPERTIES
from collection_manager.devservices.kafka_properties import configure
from collection_manager.devservices.processes import (
    LOOPBACK,
    accepts_connections,
    free_port,
    interrupts_deferred,
    port_is_free,
    start_process,
    stop_recorded,
    wait_until_ready,
)
from collection_manager.devservices.redis_cluster import (
    LocalRedisCluster,
    RedisNode,
    create_cluster,
    node_command,
    replicas_synced,
)
from collection_manager.devservices.redis_server import redis_answers
from collection_manager.devservices.replicated_layout import (
    PRIMARIES,
    REPLICAS_PER_PRIMARY,
    Layout,
    Node,
    is_replicated,
    layout_dir,
    load_layout,
    save_layout,
)
from collection_manager.storage.client import REDIS_FAULTS

_FRESH_ATTEMPTS = 3  # a new deployment that lost a port race is planned again
_CREATED = "redis-cluster-created"  # written once `redis-cli --cluster create` succeeded


class Records:
    """The state file's records, saved at every change (``infra up``'s own)."""

    def __init__(self, recorded: dict[str, Service], save: Callable[[], None]) -> None:
        self.recorded = recorded
        self._save = save

    def running(self, name: str) -> Service | None:
        found = self.recorded.get(name)
        return found if found is not None and is_running(found) else None

    def add(self, service: Service) -> None:
        self.recorded[service.name] = service
        self._save()

    def forget(self, name: str) -> None:
        if self.recorded.pop(name, None) is not None:
            self._save()


def bring_up(config: InfraConfig, records: Records) -> tuple[Layout, list[str]]:
    """Starts every node of the deployment that does not run and waits until the whole
    deployment answers; returns its layout and the names of the nodes started."""
    layout = load_layout(config.state_dir)
    if layout is None:
        running = sorted(name for name in records.recorded if is_replicated(name))
        if any(records.running(name) for name in running):
            raise InfrastructureError(
                f"{layout_dir(config.state_dir)}/layout.json is gone while nodes of the "
                "replicated deployment run: stop them with `collection-manager infra down` first"
            )
        return _fresh(config, records)
    return layout, _start_missing(config, records, layout, fresh=False)


def _fresh(config: InfraConfig, records: Records) -> tuple[Layout, list[str]]:
    for attempt in range(1, _FRESH_ATTEMPTS + 1):
        # Ports chosen just before the start: another process may take one meanwhile (then
        # the start is tried again on others).
        layout = Layout.plan(free_port, random_cluster_id())
        try:
            return layout, _start_missing(config, records, layout, fresh=True)
        except InfrastructureError as exc:
            if "Address already in use" not in str(exc) or attempt == _FRESH_ATTEMPTS:
                raise
    raise AssertionError("unreachable")


def _start_missing(config: InfraConfig, records: Records, layout: Layout, fresh: bool) -> list[str]:
    """Starts the nodes that do not run, waits for all; on any failure (Ctrl-C too) stops
    what it started, and a new deployment leaves nothing behind."""
    missing = [node for node in layout.nodes if records.running(node.name) is None]
    started: list[str] = []
    try:
        if fresh:
            save_layout(config.state_dir, layout)
        _check_ports(missing, fresh, config.state_dir)
        _start_brokers(config, records, layout, [n for n in missing if n.is_broker], started)
        for node in missing:
            if not node.is_broker:
                _spawn_redis(config, records, node, started)
        _wait(config, records, layout.redis, started, _redis_node_answers)
        _create_cluster_once(config, layout)
        _wait(config, records, layout.brokers, started, _broker_answers)
        _wait_cluster_synced(config, records, layout)
    except BaseException:
        with interrupts_deferred():
            for name in started:
                service = records.recorded[name]
                if service.started is not None:
                    stop_recorded(service.pid, service.started)
                records.forget(name)
            if fresh:
                shutil.rmtree(layout_dir(config.state_dir), ignore_errors=True)
        raise
    return started


def _check_ports(missing: list[Node], fresh: bool, state_dir: Path) -> None:
    for node in missing:
        for port in (node.port, node.peer_port):
            if port_is_free(port):
                continue
            if fresh:  # taken since it was planned: plan again (``_fresh``)
                raise InfrastructureError(f"Address already in use: {LOOPBACK}:{port}")
            raise InfrastructureError(
                f"port {port} of {node.name} on {LOOPBACK} is taken by another process, and "
                f"the replicated deployment's nodes know each other by port: stop that "
                f"process, or remove {layout_dir(state_dir)} for a new deployment"
            )


def _home(config: InfraConfig, node: Node) -> Path:
    return layout_dir(config.state_dir) / node.name


def _start_brokers(
    config: InfraConfig,
    records: Records,
    layout: Layout,
    brokers: list[Node],
    started: list[str],
) -> None:
    """Formats (once) and starts ``brokers``, all before any is waited for: each needs a
    quorum of the others to answer."""
    if not brokers:
        return
    java = require_java()
    classpath = str(broker_jars(config) / "*")
    options = config.kafka_java_options.split()
    commands = []
    for node in brokers:
        home = _home(config, node)
        home.mkdir(parents=True, exist_ok=True)
        node_id = layout.brokers.index(node) + 1
        props = configure(
            home, node.port, node.peer_port, node_id=node_id, voters=layout.voters,
            replication=REPLICATED_PROPERTIES,
        )  # fmt: skip
        format_storage(java, options, classpath, props, home, cluster_id=layout.kafka_cluster_id)
        commands.append(broker_command(java, config.kafka_heap, options, classpath, props))
    for node, command in zip(brokers, commands, strict=True):
        home = _home(config, node)
        marker = str(home / "server.properties")  # on the broker's command line
        _spawn(records, started, node, command, home / "kafka.log", node.address, marker)


def _spawn_redis(config: InfraConfig, records: Records, node: Node, started: list[str]) -> None:
    home = _home(config, node)
    home.mkdir(parents=True, exist_ok=True)
    command = replicated_node_command(home, node.port, node.peer_port)
    # redis-server rewrites its command line to "path host:port [cluster]": match that.
    log = home / "redis.log"
    _spawn(records, started, node, command, log, f"redis://{node.address}/0", node.address)


def replicated_node_command(home: Path, port: int, bus_port: int) -> list[str]:
    """A Redis node of the deployment: the fault tests' cluster node, with every write
    fsynced (see the module's docstring)."""
    return node_command(home, port, bus_port, "--appendfsync", "always")


def _spawn(
    records: Records,
    started: list[str],
    node: Node,
    command: list[str],
    log: Path,
    address: str,
    marker: str,
) -> None:
    """Starts ``node``'s process, recorded the moment it exists (before a Ctrl-C can
    interrupt): whatever runs, the state file names."""

    def record(pid: int) -> None:
        records.add(Service(node.name, pid, address, str(log), marker, start_time(pid)))
        started.append(node.name)

    start_process(command, log, cwd=log.parent, record=record)


def _broker_answers(service: Service) -> bool:
    port = int(service.address.rsplit(":", 1)[1])
    return accepts_connections(port) and kafka_answers(service.address)


def _redis_node_answers(service: Service) -> bool:
    return redis_answers(service.address)


def _wait(
    config: InfraConfig,
    records: Records,
    nodes: tuple[Node, ...],
    started: list[str],
    answers: Callable[[Service], bool],
) -> None:
    for node in nodes:
        service = records.recorded[node.name]
        wait_until_ready(
            node.name,
            service.pid,
            Path(service.log),
            functools.partial(answers, service),
            config.startup_timeout_s,
            # One that ran before may be busy (loading its AOF): never stopped here.
            stop_on_timeout=node.name in started,
        )


def _create_cluster_once(config: InfraConfig, layout: Layout) -> None:
    marker = layout_dir(config.state_dir) / _CREATED
    if marker.exists():
        return
    create_cluster(
        [node.address for node in layout.redis], REPLICAS_PER_PRIMARY, config.startup_timeout_s
    )
    marker.touch()


def _wait_cluster_synced(config: InfraConfig, records: Records, layout: Layout) -> None:
    """Until every node says the cluster is ok, there are three primaries and every
    replica has its primary's data: only then does a failover keep what was written."""
    services = [records.recorded[node.name] for node in layout.redis]
    cluster = LocalRedisCluster(
        [RedisNode(s.pid, int(s.marker.rsplit(":", 1)[1]), Path(s.log)) for s in services]
    )
    first = services[0]
    wait_until_ready(
        "the Redis Cluster (every replica in sync)",
        first.pid,
        Path(first.log),
        lambda: _synced(cluster),
        config.startup_timeout_s,
        stop_on_timeout=False,
    )


def _synced(cluster: LocalRedisCluster) -> bool:
    # A node still loading its AOF refuses commands: not synced yet.
    with contextlib.suppress(InfrastructureError, *REDIS_FAULTS):
        return replicas_synced(cluster, PRIMARIES)
    return False
