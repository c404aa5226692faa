"""A single-node KRaft Kafka broker (combined broker and controller) on loopback."""

from __future__ import annotations

import base64
import dataclasses
import logging
import os
import shutil
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

from collection_manager.config import KAFKA_VERSION, InfraConfig
from collection_manager.config.machine import require_jars, require_java
from collection_manager.config.services import Service
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.processes import (
    LOOPBACK,
    accepts_connections,
    choose_port,
    interrupts_deferred,
    start_process,
    start_time,
    wait_until_ready,
)

logger = logging.getLogger(__name__)


def _nothing(_service: Service) -> None:
    pass


# Internal topics must fit one broker, or consumer groups and transactions hang
# (``replicated_properties`` gives a cluster of brokers their replication instead).
_SERVER_PROPERTIES = """\
process.roles=broker,controller
node.id={node_id}
controller.quorum.voters={voters}
listeners=PLAINTEXT://{host}:{port},CONTROLLER://{host}:{controller_port}{secured_listener}
advertised.listeners=PLAINTEXT://{host}:{port}{secured_listener}
controller.listener.names=CONTROLLER
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT{secured_protocol}
inter.broker.listener.name=PLAINTEXT
log.dirs={data_dir}
num.partitions=4
auto.create.topics.enable=true
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
log.retention.hours=24
"""

# A SASL_SSL listener: SCRAM-SHA-512 users, the broker's PEM key and certificate, and
# client certificates of the given CA required.
_SECURED_PROPERTIES = """\
sasl.enabled.mechanisms=SCRAM-SHA-512
listener.name.secured.scram-sha-512.sasl.jaas.config=\
org.apache.kafka.common.security.scram.ScramLoginModule required;
listener.name.secured.ssl.keystore.type=PEM
listener.name.secured.ssl.keystore.location={keystore}
listener.name.secured.ssl.truststore.type=PEM
listener.name.secured.ssl.truststore.location={truststore}
listener.name.secured.ssl.client.auth=required
"""


@dataclasses.dataclass(frozen=True)
class SecuredListener:
    """A second listener, SASL_SSL with SCRAM-SHA-512 and client certificates, for tests of
    secured clients (the broker's own traffic stays on its plaintext listener).

    Attributes:
        port: its loopback port.
        keystore: PEM file holding the broker's private key and certificate.
        truststore: PEM file of the CA whose client certificates it accepts.
        users: SCRAM users and their passwords, created when the storage is formatted.
    """

    port: int
    keystore: Path
    truststore: Path
    users: Mapping[str, str] = dataclasses.field(repr=False)


_LOG4J2 = """\
rootLogger.level=INFO
rootLogger.appenderRef.stdout.ref=STDOUT
appender.stdout.type=Console
appender.stdout.name=STDOUT
appender.stdout.layout.type=PatternLayout
appender.stdout.layout.pattern=[%d] %p %m (%c)%n
logger.kafka.name=kafka
logger.kafka.level=WARN
logger.apache.name=org.apache.kafka
logger.apache.level=WARN
logger.started.name=kafka.server.KafkaRaftServer
logger.started.level=INFO
"""


BROKER_COORDINATES = (
    f"org.apache.kafka:kafka_2.13:{KAFKA_VERSION}",
    # Without a logging backend the broker runs but logs nothing.
    "org.apache.logging.log4j:log4j-slf4j-impl:2.24.3",
)


def broker_jar_dir(config: InfraConfig) -> Path:
    """Where ``collection-manager setup`` puts the broker's classpath."""
    return config.cache_dir / f"kafka-{KAFKA_VERSION}"


def broker_jars(config: InfraConfig) -> Path:
    """The directory holding the broker's classpath, as setup resolved it."""
    dest = broker_jar_dir(config)
    require_jars(BROKER_COORDINATES, dest, f"the Kafka {KAFKA_VERSION} broker")
    return dest


def configure(
    home: Path,
    port: int,
    controller_port: int,
    secured: SecuredListener | None = None,
    node_id: int = 1,
    voters: str = "",
    replication: str = "",
) -> Path:
    """Writes the broker's ``server.properties`` and logging configuration into ``home``.

    Args:
        voters: the controller quorum (``id@host:port,...``); by default this broker alone.
        replication: properties that override the single broker's replication settings.
    """
    data_dir = home / "data"
    props = home / "server.properties"
    text = _SERVER_PROPERTIES.format(
        node_id=node_id,
        voters=voters or f"{node_id}@{LOOPBACK}:{controller_port}",
        host=LOOPBACK,
        port=port,
        controller_port=controller_port,
        data_dir=data_dir,
        secured_listener=f",SECURED://{LOOPBACK}:{secured.port}" if secured else "",
        secured_protocol=",SECURED:SASL_SSL" if secured else "",
    )
    if secured:
        text += _SECURED_PROPERTIES.format(keystore=secured.keystore, truststore=secured.truststore)
    props.write_text(text + replication)
    (home / "log4j2.properties").write_text(_LOG4J2)
    return props


def random_cluster_id() -> str:
    """A new KRaft cluster id as ``kafka-storage random-uuid`` prints it (Kafka's ``Uuid``:
    16 random bytes in URL-safe base64 without padding, never starting with "-"), made
    here to spare a JVM start per new broker."""
    while True:
        text = base64.urlsafe_b64encode(os.urandom(16)).rstrip(b"=").decode()
        if not text.startswith("-"):
            return text


def format_storage(
    java: str,
    java_options: list[str],
    classpath: str,
    props: Path,
    home: Path,
    secured: SecuredListener | None = None,
    cluster_id: str = "",
) -> None:
    """Formats the broker's log directory once (a cluster's brokers share ``cluster_id``;
    by default a new one)."""
    data = home / "data"
    if (data / "meta.properties").exists():
        return
    # meta.properties is the formatter's last write: without it, the directory holds at most
    # a format cut short, which a new format with another cluster id would refuse.
    shutil.rmtree(data, ignore_errors=True)
    command = [
        java,
        *java_options,
        "-cp",
        classpath,
        f"-Dlog4j2.configurationFile={home / 'log4j2.properties'}",
        "kafka.tools.StorageTool",
        "format",
        "-t",
        cluster_id or random_cluster_id(),
        "-c",
        str(props),
        *(
            arg
            for name, password in (secured.users.items() if secured else ())
            for arg in ("--add-scram", f"SCRAM-SHA-512=[name={name},password={password}]")
        ),
    ]
    # Ctrl-C inside Popen() itself (between the fork and its return) would leave a formatter
    # that nobody kills writing this directory under the next `infra up`; so the spawn is
    # never cut (a Ctrl-C held back is raised right after it), and the formatter is killed
    # and reaped however the wait ends.
    formatter: subprocess.Popen[str] | None = None
    try:
        with interrupts_deferred():
            formatter = subprocess.Popen(
                command, cwd=home, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        out, err = formatter.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        raise InfrastructureError("formatting Kafka storage did not end within 120 s") from None
    finally:
        if formatter is not None and formatter.poll() is None:
            formatter.kill()
            formatter.wait()
    if formatter.returncode != 0:
        raise InfrastructureError(f"formatting Kafka storage failed:\n{out}{err}")


def broker_command(
    java: str, heap: str, java_options: list[str], classpath: str, props: Path
) -> list[str]:
    """The command line of a broker configured by ``props`` (``configure``)."""
    return [
        java,
        f"-Xmx{heap}",
        *java_options,
        "-cp",
        classpath,
        f"-Dlog4j2.configurationFile={props.parent / 'log4j2.properties'}",
        "kafka.Kafka",
        str(props),
    ]


def start_kafka(
    config: InfraConfig,
    record: Callable[[Service], None] = _nothing,
    secured: SecuredListener | None = None,
) -> Service:
    """Starts the broker, waits until it answers, and returns its record.

    ``record`` gets the record as soon as the process exists, before it answers (see
    ``start_process``). ``secured`` adds a SASL_SSL listener.
    """
    java = require_java()
    classpath = str(broker_jars(config) / "*")
    home = config.state_dir / "kafka"
    home.mkdir(parents=True, exist_ok=True)
    port = choose_port(config.kafka_port, home / "port", "Kafka")
    controller_port = choose_port(0, home / "controller-port", "the Kafka controller")
    props = configure(home, port, controller_port, secured)
    java_options = config.kafka_java_options.split()
    format_storage(java, java_options, classpath, props, home, secured)
    log_path = home / "kafka.log"
    cmd = broker_command(java, config.kafka_heap, java_options, classpath, props)
    address = f"{LOOPBACK}:{port}"

    def service(pid: int) -> Service:
        return Service("kafka", pid, address, str(log_path), str(props), start_time(pid))

    pid = start_process(cmd, log_path, cwd=home, record=lambda pid: record(service(pid)))
    logger.info("started Kafka (pid %d) on %s; log %s", pid, address, log_path)
    wait_until_ready(
        "the Kafka broker",
        pid,
        log_path,
        lambda: accepts_connections(port) and kafka_answers(address),
        config.startup_timeout_s,
    )
    return service(pid)


def kafka_answers(bootstrap: str, timeout_s: float = 3.0) -> bool:
    """Whether a broker at ``bootstrap`` answers a metadata request."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient

    from collection_manager.kafka.security import from_environment

    # log_level 0 keeps librdkafka quiet while the broker is still coming up.
    admin = AdminClient({**from_environment().client_settings(bootstrap), "log_level": 0})
    try:
        return bool(admin.list_topics(timeout=timeout_s).brokers)
    except KafkaException:
        return False
