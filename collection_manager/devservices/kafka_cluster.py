"""Three KRaft brokers on loopback, each a broker and a controller, replicating every topic.

For tests of the pipeline when a broker fails: every topic (the request and dead-letter topics, and
Kafka's own offsets topic) has replication factor 3 and ``min.insync.replicas`` 2, and no unclean
leader election, so one broker lost loses no acknowledged record (``acks=all`` with the idempotent
producer, docs/concepts/requests-and-ordering.md). The three form the controller quorum too: one of
them lost, the other two still elect leaders. Clients name all three in ``CM_KAFKA_BOOTSTRAP``.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import signal
import time
from pathlib import Path

from confluent_kafka.admin import AdminClient, PartitionMetadata

from collection_manager.config import InfraConfig, from_env
from collection_manager.config.machine import require_java
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_broker import (
    broker_command,
    broker_jars,
    format_storage,
    kafka_answers,
    random_cluster_id,
)
from collection_manager.devservices.kafka_properties import configure
from collection_manager.devservices.processes import (
    LOOPBACK,
    accepts_connections,
    free_port,
    pid_alive,
    start_process,
    stop_pid,
    wait_until_ready,
)

REPLICATION_FACTOR = 3
MIN_IN_SYNC = 2
_START_ATTEMPTS = 3  # a start that lost a port race to another process is tried again

REPLICATED_PROPERTIES = f"""\
default.replication.factor={REPLICATION_FACTOR}
min.insync.replicas={MIN_IN_SYNC}
offsets.topic.replication.factor={REPLICATION_FACTOR}
transaction.state.log.replication.factor={REPLICATION_FACTOR}
transaction.state.log.min.isr={MIN_IN_SYNC}
share.coordinator.state.topic.replication.factor={REPLICATION_FACTOR}
share.coordinator.state.topic.min.isr={MIN_IN_SYNC}
unclean.leader.election.enable=false
"""


@dataclasses.dataclass
class KafkaNode:
    """One broker of the cluster; ``pid`` changes when it is started again."""

    node_id: int
    port: int
    home: Path
    command: list[str]
    pid: int = 0

    @property
    def address(self) -> str:
        return f"{LOOPBACK}:{self.port}"

    @property
    def log(self) -> Path:
        return self.home / "kafka.log"


@dataclasses.dataclass
class LocalKafkaCluster:
    """Running brokers; ``bootstrap`` names them all."""

    nodes: list[KafkaNode]
    timeout_s: float = 120.0

    @property
    def bootstrap(self) -> str:
        return ",".join(node.address for node in self.nodes)

    def start(self, node: KafkaNode) -> None:
        """Starts ``node`` (again) and waits until it answers."""
        node.pid = start_process(node.command, node.log, cwd=node.home)
        self.wait_ready(node)

    def wait_ready(self, node: KafkaNode) -> None:
        """Waits until ``node`` answers a metadata request."""
        wait_until_ready(
            f"Kafka broker {node.node_id}",
            node.pid,
            node.log,
            lambda: accepts_connections(node.port) and kafka_answers(node.address),
            self.timeout_s,
        )

    def kill(self, node: KafkaNode) -> None:
        """SIGKILLs ``node``: no shutdown, no leadership handed over."""
        os.kill(node.pid, signal.SIGKILL)
        stop_pid(node.pid)  # reaps it

    def stop(self, node: KafkaNode | None = None) -> None:
        """Stops ``node`` cleanly (SIGTERM: it hands its leaderships over), or every node
        at once with SIGKILL: a clean stop of the last brokers waits, up to a minute, for a
        controller quorum that is already gone, and a throwaway cluster keeps nothing."""
        if node is not None:
            stop_pid(node.pid, grace_s=60)
            return
        for each in self.nodes:
            if each.pid and pid_alive(each.pid):
                self.kill(each)

    def leader_of(self, topic: str, partition: int) -> KafkaNode:
        """The broker that leads ``partition`` of ``topic`` now."""
        leader = self._partitions(topic)[partition].leader
        return next(node for node in self.nodes if node.node_id == leader)

    def wait_fully_replicated(self, topic: str) -> None:
        """Waits until every partition of ``topic`` has all brokers in sync (a broker
        started again has caught up)."""
        deadline = time.monotonic() + self.timeout_s
        everyone = {node.node_id for node in self.nodes}
        while time.monotonic() < deadline:
            try:
                partitions = self._partitions(topic)
            except InfrastructureError:
                partitions = {}
            if partitions and all(set(p.isrs) == everyone for p in partitions.values()):
                return
            time.sleep(0.25)
        raise InfrastructureError(f"topic {topic} was not in sync on every broker in time")

    @functools.cached_property
    def _admin(self) -> AdminClient:
        # One for every poll: it names every broker and reconnects to those that return.
        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def _partitions(self, topic: str) -> dict[int, PartitionMetadata]:
        found = self._admin.list_topics(topic, timeout=10).topics.get(topic)
        if found is None or found.error is not None:
            raise InfrastructureError(f"no metadata for topic {topic}: {found and found.error}")
        return dict(found.partitions)


def start_kafka_cluster(
    state_dir: Path,
    brokers: int = REPLICATION_FACTOR,
    heap: str = "384m",
    java_options: tuple[str, ...] = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC"),
    timeout_s: float = 120.0,
) -> LocalKafkaCluster:
    """``brokers`` brokers sharing one KRaft quorum; stopped again on failure."""
    java = require_java()
    classpath = str(broker_jars(from_env(InfraConfig)) / "*")
    cluster_id = random_cluster_id()
    homes = [state_dir / f"broker-{index + 1}" for index in range(brokers)]
    for attempt in range(1, _START_ATTEMPTS + 1):
        nodes = _configured_nodes(homes, java, heap, java_options, classpath, cluster_id)
        cluster = LocalKafkaCluster(nodes, timeout_s)
        try:
            _start_together(cluster)
            return cluster
        except InfrastructureError as exc:
            cluster.stop()
            if "Address already in use" not in str(exc) or attempt == _START_ATTEMPTS:
                raise
        except BaseException:
            cluster.stop()
            raise
    raise AssertionError("unreachable")


def _configured_nodes(
    homes: list[Path],
    java: str,
    heap: str,
    java_options: tuple[str, ...],
    classpath: str,
    cluster_id: str,
) -> list[KafkaNode]:
    """A broker in each of ``homes``, configured as one quorum and formatted, not started."""
    # Ports chosen just before the start: another process may take a free port
    # meanwhile (then the start is tried again on others).
    ports = [(free_port(), free_port()) for _ in homes]
    voters = ",".join(f"{i + 1}@{LOOPBACK}:{c}" for i, (_, c) in enumerate(ports))
    nodes = []
    for index, (home, (port, controller_port)) in enumerate(zip(homes, ports, strict=True)):
        home.mkdir(parents=True, exist_ok=True)
        props = configure(
            home, port, controller_port, node_id=index + 1, voters=voters,
            replication=REPLICATED_PROPERTIES,
        )  # fmt: skip
        options = list(java_options)
        format_storage(java, options, classpath, props, home, cluster_id=cluster_id)
        command = broker_command(java, heap, options, classpath, props)
        nodes.append(KafkaNode(index + 1, port, home, command))
    return nodes


def _start_together(cluster: LocalKafkaCluster) -> None:
    """Starts every broker, then waits until each answers."""
    for node in cluster.nodes:  # all at once: each waits for a quorum of the others
        node.pid = start_process(node.command, node.log, cwd=node.home)
    for node in cluster.nodes:
        cluster.wait_ready(node)
