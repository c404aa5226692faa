"""A single-node KRaft Kafka broker (combined broker and controller) on loopback: its
classpath, its log directory formatted once, its command line, and its start; the files it
is configured by are ``kafka_properties.py``'s."""

from __future__ import annotations

import base64
import logging
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from collection_manager.config import KAFKA_VERSION, InfraConfig
from collection_manager.config.machine import require_jars, require_java
from collection_manager.config.services import Service
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_properties import SecuredListener, configure
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
    command = _format_command(java, java_options, classpath, props, home, secured, cluster_id)
    _run_formatter(command, home)


def _format_command(
    java: str,
    java_options: list[str],
    classpath: str,
    props: Path,
    home: Path,
    secured: SecuredListener | None,
    cluster_id: str,
) -> list[str]:
    """The command line of Kafka's ``StorageTool format``, with the SCRAM users of
    ``secured`` and ``cluster_id`` (by default a new one)."""
    return [
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


def _run_formatter(command: list[str], home: Path) -> None:
    """Runs the formatter ``command`` in ``home`` to its end, within 120 s."""
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
