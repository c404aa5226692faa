"""A Kafka broker's configuration files, written into its home: ``server.properties`` (its
KRaft roles, listeners, and the replication of a single broker), the settings of an optional
SASL_SSL listener, and ``log4j2.properties``."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from collection_manager.devservices.processes import LOOPBACK

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
