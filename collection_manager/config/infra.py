"""The settings of the ground every process stands on: where Kafka and Redis are (or how to
start them locally), how Spark runs, how every process logs, and the Kafka and Spark
versions whose jars ``collection-manager setup`` caches.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

from collection_manager.config.errors import ConfigError
from collection_manager.config.settings import setting

KAFKA_VERSION = "4.4.0"
# Must equal the installed pyspark version: the connector is compiled against it.
SPARK_VERSION = "4.2.0"


def _default_cache_dir() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME", "~/.cache")).expanduser() / "collection-manager"


def _default_state_dir() -> Path:
    base = Path(os.environ.get("XDG_STATE_HOME", "~/.local/state")).expanduser()
    return base / "collection-manager"


LOG_FORMATS = ("text", "json")


@dataclasses.dataclass(frozen=True)
class LogConfig:
    """How every process logs (collection_manager/observability/logs.py)."""

    log_format: str = setting(
        "text",
        "text: a line per record, 'time LEVEL logger: message'; json: one JSON object a line "
        "(time, level, logger, message, pid and the record's context), the Spark JVM's lines "
        "too, for a log pipeline.",
    )

    def __post_init__(self) -> None:
        if self.log_format not in LOG_FORMATS:
            raise ConfigError(
                f"CM_LOG_FORMAT={self.log_format!r} is none of {', '.join(LOG_FORMATS)}"
            )


@dataclasses.dataclass(frozen=True)
class InfraConfig:
    """Where Kafka and Redis are, or how to start them locally when they are not given."""

    kafka_bootstrap: str | None = setting(
        None, "Bootstrap servers of an existing Kafka; when set, no broker is started."
    )
    redis_url: str | None = setting(
        None,
        "URL of an existing Redis (redis://host:port/db); when set, none is started. An ACL "
        "user and password go in it (redis://user:password@host:port/db; never printed), TLS "
        "as rediss:// with ?ssl_ca_certs=CA.pem and, for client certificates, "
        "&ssl_certfile=...&ssl_keyfile=...",
    )
    kafka_properties_file: Path | None = setting(
        None,
        "A file of Kafka client security settings, one name=value per line, in librdkafka's "
        "names: security.protocol, sasl.mechanism, sasl.username, sasl.password, "
        "ssl.ca.location, ssl.certificate.location, ssl.key.location. Every Kafka client "
        "and Spark's Kafka source get them; the CM_KAFKA_* settings below override it.",
    )
    kafka_security_protocol: str | None = setting(
        None, "PLAINTEXT (the default), SSL, SASL_PLAINTEXT or SASL_SSL."
    )
    kafka_sasl_mechanism: str | None = setting(None, "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512.")
    kafka_sasl_username: str | None = setting(None, "The SASL user.")
    kafka_sasl_password: str | None = dataclasses.field(
        default=None,
        repr=False,
        metadata={
            "help": "The SASL user's password; never printed. Prefer the properties file, "
            "readable only by the service's user."
        },
    )
    kafka_ssl_ca_location: Path | None = setting(
        None, "PEM file of the CA that signed the brokers' certificates."
    )
    kafka_ssl_certificate_location: Path | None = setting(
        None, "PEM file of this client's certificate, for brokers that require one."
    )
    kafka_ssl_key_location: Path | None = setting(
        None, "PEM file of this client's private key (unencrypted PKCS#8)."
    )
    cache_dir: Path = dataclasses.field(
        default_factory=_default_cache_dir,
        metadata={"help": "Cache of resolved Kafka and Spark connector jars."},
    )
    state_dir: Path = dataclasses.field(
        default_factory=_default_state_dir,
        metadata={"help": "Data, logs and the pid/state file of locally started services."},
    )
    kafka_port: int = setting(0, "Loopback port of the local broker; 0 picks a free one.")
    redis_port: int = setting(0, "Loopback port of the local Redis; 0 picks a free one.")
    kafka_heap: str = setting("512m", "Maximum Java heap of the local broker.")
    kafka_java_options: str = setting(
        "-XX:TieredStopAtLevel=1",
        "More JVM options of the local broker and its storage tool. The default compiles with "
        "C1 only: a local broker (development, tests, the demo) starts sooner and spends less "
        "CPU compiling; set it empty for C2's peak speed.",
    )
    startup_timeout_s: float = setting(90.0, "How long to wait for a local service to answer.")
    maven_timeout_s: float = setting(600.0, "How long jar resolution from Maven Central may take.")

    @property
    def services_file(self) -> Path:
        """The state file that records pid, address and log of each started service."""
        return self.state_dir / "services.json"


@dataclasses.dataclass(frozen=True)
class SparkConfig:
    """How the Spark application runs; the same job runs locally or on a cluster."""

    spark_master: str = setting(
        "local[*]", "Spark master: local[*], spark://host:7077, k8s://... (unchanged job)."
    )
    spark_driver_memory: str = setting("1g", "Memory of the Spark driver.")
    spark_ship_environment: bool = setting(
        True,
        "On a cluster, pack this project and its dependencies into an archive that Spark "
        "ships to every executor (spark.archives), whose Python workers run it. Turn it off "
        "when the executors' image already has them (and set PYSPARK_PYTHON).",
    )
    spark_log_level: str = setting(
        "WARN",
        "Log level of Spark's own logs where the process logs progress (-v); without, "
        "Spark logs fatal errors only (what fails reaches the consumer as its query's error).",
    )
    spark_java_options: str = setting(
        "-XX:TieredStopAtLevel=1 -Xss16m",
        "JVM options of the Spark driver and executors. The default compiles with C1 only: "
        "the consumer's JVM only moves bytes to Python, and C2's compiler threads compete "
        "with it for the cores. A larger thread stack keeps Spark's stream thread from a "
        "StackOverflowError in a regex over a long error message when a batch fails.",
    )
