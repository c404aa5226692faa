"""Typed, immutable configuration read from ``CM_*`` environment variables.

Every setting is a field of a frozen dataclass with a ``help`` text in its metadata, so the
configuration reference in the docs can be generated from (and checked against) the code.
The variable of field ``kafka_bootstrap`` is ``CM_KAFKA_BOOTSTRAP``.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import types
import typing
import urllib.parse
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TypeVar

from collection_manager.config.errors import ConfigError

ENV_PREFIX = "CM_"
KAFKA_VERSION = "4.4.0"
# Must equal the installed pyspark version: the connector is compiled against it.
SPARK_VERSION = "4.2.0"

T = TypeVar("T")

logger = logging.getLogger(__name__)

# Settings renamed in the current release: the old variable's name -> the new one's. The
# old name is still read for this one release, with a warning (docs/concepts/upgrades.md); a release
# empties the table of the release before it. A setting removed outright maps to None.
RENAMED: Mapping[str, str | None] = {}


def setting(default: Any, help: str) -> Any:
    """Declares a configuration field with its default and a one-line description."""
    return dataclasses.field(default=default, metadata={"help": help})


def env_name(field_name: str) -> str:
    """The environment variable that sets ``field_name``."""
    return ENV_PREFIX + field_name.upper()


def _parse(raw: str, kind: Any, name: str) -> Any:
    if isinstance(kind, types.UnionType) or typing.get_origin(kind) is typing.Union:
        inner = [arg for arg in typing.get_args(kind) if arg is not type(None)]
        return None if raw == "" else _parse(raw, inner[0], name)
    try:
        if kind is Path:
            return Path(raw).expanduser()
        if kind is bool:
            if raw.lower() not in ("1", "true", "yes", "0", "false", "no"):
                raise ValueError(raw)
            return raw.lower() in ("1", "true", "yes")
        return kind(raw)
    except ValueError as exc:
        raise ConfigError(
            f"{name}={raw!r} is not a valid {getattr(kind, '__name__', kind)}"
        ) from exc


def from_env(cls: type[T], environ: Mapping[str, str] | None = None) -> T:
    """Builds a config dataclass from ``CM_*`` variables; unset ones keep their defaults."""
    environ = os.environ if environ is None else environ
    hints = typing.get_type_hints(cls)
    values = {}
    for field in dataclasses.fields(cls):  # type: ignore[arg-type]
        name = env_name(field.name)
        raw = environ[name] if name in environ else _renamed(name, environ)
        if raw is not None:
            values[field.name] = _parse(raw, hints[field.name], name)
    for old in sorted(RENAMED.keys() & environ.keys()):
        if RENAMED[old] is None:
            _warn_once(f"{old} is no setting any more: it is ignored (CHANGELOG.md)")
    return cls(**values)


_warned: set[str] = set()


def _warn_once(message: str) -> None:
    # Each command reads several config classes: one warning per process is enough.
    if message not in _warned:
        _warned.add(message)
        logger.warning("%s", message)


def _renamed(name: str, environ: Mapping[str, str]) -> str | None:
    """The value of the old name of setting ``name``, if it is set (with a warning)."""
    for old, new in RENAMED.items():
        if new == name and old in environ:
            _warn_once(f"{old} is renamed {name}: the old name is read for this release only")
            return environ[old]
    return None


def redact_url(url: str) -> str:
    """``url`` fit for logs: a password in it (``redis://:secret@host``) becomes ``***``.

    A URL too broken to tell where a password would be is not shown at all.
    """
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "(a URL that cannot be parsed)"
    if parts.password is None:
        return url
    user = parts.username or ""
    host = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"{user}:***@{host}"))


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


@dataclasses.dataclass(frozen=True)
class ConsumerConfig:
    """The Spark consumer: what it reads, how often, and where it keeps its progress."""

    topic: str = setting("cm.requests", "Topic of the requests (key = collection id).")
    dead_letter_topic: str = setting(
        "cm.dead-letters", "Topic that receives undecodable or invalid requests, with reasons."
    )
    # A string, not a Path: Path would fold hdfs://nn/x or s3a://bucket/x into hdfs:/nn/x.
    checkpoint_dir: str | None = dataclasses.field(
        default=None,
        metadata={
            "help": "Spark checkpoint of the streaming query (offsets, commits): a local "
            "path or a URI (hdfs://, s3a://); default <state_dir>/checkpoints/consumer-<topic> "
            "(demo-<topic> for the demo)."
        },
    )
    create_topic: bool = setting(
        False,
        "Create the request topic when it is missing (else `consumer run` waits for it); with "
        "CM_TOPIC_PARTITIONS partitions.",
    )
    topic_partitions: int = setting(
        4,
        "Partitions of a request topic that `consumer run` creates: the consumer's parallelism.",
    )
    trigger_interval_ms: int = setting(
        100,
        "Micro-batch trigger interval: a batch starts at most this often; one that takes "
        "longer is followed by the next at once. 100 rather than 500 buys a lower "
        "publish-to-visible latency with more idle polling of Kafka (the figures of both: "
        "docs/benchmarks.md).",
    )
    redis_replica_acks: int = setting(
        0,
        "Replicas of every Redis primary that must hold a micro-batch's writes (Redis WAIT) "
        "before its progress is recorded, and the controller's epochs and member records "
        "before anything acts on them: 1 with a replica per primary, so a failover loses "
        "nothing recorded as done and hands out no epoch twice; 0 for a Redis without "
        "replicas.",
    )
    redis_replica_ack_timeout_ms: int = setting(
        10_000,
        "How long a batch, or a controller's epoch or member change, waits for those "
        "replicas; past it the consumer retries as in an outage, recording no progress "
        "meanwhile, and the add or removal fails (the lease loop retries a removal).",
    )
    commit_group: str = setting(
        "",
        "Kafka consumer group that the consumer commits its applied offsets to after each "
        "batch, so kafka_exporter, Burrow and kafka-consumer-groups.sh show its lag; empty: "
        "none. Redis's progress stays the truth of what was applied.",
    )
    consumer_metrics_address: str = setting(
        "",
        "host:port where `consumer run` serves /metrics (Prometheus), /healthz and /readyz, "
        "e.g. "
        "127.0.0.1:9400 (port 0: any free one); empty: no listener.",
    )
    max_offsets_per_trigger: int = setting(
        0, "Back-pressure: at most this many requests per micro-batch; 0 means no limit."
    )
    fail_on_data_loss: bool = setting(
        False, "Stop when Kafka lost requests the query did not read yet (retention, reset)."
    )
    max_request_bytes: int = setting(
        1_048_576, "Requests larger than this go to the dead-letter topic."
    )
    log_max_length: int = setting(
        1_000_000,
        "Approximate number of change-log entries kept per collection; an entry holds the "
        "updates of one time, up to 512.",
    )
    expiration_offset_ms: int = setting(
        0,
        "Future retractions at or after start + this are not stored (rebuilt when the clock "
        "gets there); 0 stores all of them.",
    )

    def with_checkpoint(self, infra: InfraConfig, query: str = "consumer") -> ConsumerConfig:
        """This config with its checkpoint directory resolved under the state directory.

        The default depends on ``query`` and the topic, so the demo and a ``consumer
        run`` process never share a checkpoint, and a checkpoint never meets another topic.
        """
        if self.checkpoint_dir is not None:
            if "://" in self.checkpoint_dir:
                return self
            # Absolute: the Spark driver's JVM runs in a directory of its own.
            absolute = str(Path(self.checkpoint_dir).expanduser().absolute())
            return dataclasses.replace(self, checkpoint_dir=absolute)
        path = infra.state_dir / "checkpoints" / f"{query}-{self.topic}"
        return dataclasses.replace(self, checkpoint_dir=str(path))


@dataclasses.dataclass(frozen=True)
class ReplicaConfig:
    """Agents and the controller: heartbeats, leases (docs/concepts/leases-and-retention.md)."""

    replica_ttl_ms: int = setting(
        10_000,
        "A replica without a heartbeat for this long of log time (the controller's ticks "
        "the consumer applied) is removed (its lease expired).",
    )
    heartbeat_interval_ms: int = setting(1_000, "How often an agent sends a heartbeat.")
    lease_check_interval_ms: int = setting(
        500, "How often the controller checks the leases and ticks every partition."
    )
    step_interval_ms: int = setting(1_000, "How often an agent's subscribes publish changes.")
    controller_metrics_address: str = setting(
        "",
        "host:port where `controller run` serves /metrics, /healthz and /readyz (port 0: any "
        "free one); empty: no listener.",
    )
    agent_metrics_address: str = setting(
        "",
        "host:port where `replicas run` serves /metrics, /healthz and /readyz (port 0: any free "
        "one, printed at start: give each agent on a host its own); empty: no listener.",
    )
    row_ttl_ms: int = setting(
        6_000,
        "TTL of the rows agents publish to collections whose rows expire (error_counts, "
        "hydration_status, scrape_status), refreshed at every step: the rows of a replica "
        "silent this long expire one by one, before its lease. 0: no TTL (the openmetrics "
        "source refuses it); else at least 4 step intervals.",
    )
    publish_batch_rows: int = setting(1_000, "At most this many updates per Append request.")
    collection_suffix: str = setting(
        "", "Appended to the introspection collections' names (tests use their own copies)."
    )
    replica_retention_ms: int = setting(
        7 * 24 * 3600 * 1000,
        "A removed replica's control state (its issued epochs, member record, sighting and "
        "fences) is deleted this long after its removal (wall clock); its late requests are "
        "dead letters from then on. Default 7 days, at least 1 ms.",
    )
    replica_namespace: str = setting(
        "cm:replicas",
        "Prefix of every replica key in Redis (issued epochs, members, leases, sightings, "
        "log times); give the consumer the controller's. The consumer refuses epochs never "
        "issued there.",
    )


@dataclasses.dataclass(frozen=True)
class HttpConfig:
    """`server run`, the read-only HTTP API: where it listens, who may read, and its bounds."""

    http_address: str = setting(
        "127.0.0.1:8080",
        "host:port where `server run` answers the HTTP API, /metrics, /healthz and /readyz "
        "(port "
        "0: any free one, printed at start). Beyond loopback it needs CM_HTTP_TOKEN.",
    )
    http_token: str | None = dataclasses.field(
        default=None,
        repr=False,
        metadata={
            "help": "Bearer token every /api/ request must carry (Authorization: Bearer "
            "TOKEN), compared in constant time; never printed. Unset: no token asked, "
            "which `server run` allows on a loopback address only."
        },
    )
    http_tls_cert_file: Path | None = setting(
        None,
        "PEM file of the certificate (and its chain) `server run` answers HTTPS with; needs "
        "CM_HTTP_TLS_KEY_FILE. Unset: plain HTTP.",
    )
    http_tls_key_file: Path | None = setting(
        None, "PEM file of that certificate's private key (unencrypted)."
    )
    http_cors_origins: str = setting(
        "",
        "Origins whose pages may read the API from a browser (CORS), separated by commas, "
        "e.g. https://ops.example.com; * for any. Empty: no CORS header, so browsers let "
        "only pages of the API's own origin read it.",
    )
    http_max_rows: int = setting(
        10_000,
        "Most rows a JSON answer of /rows holds; a read that finds more is refused (422) "
        "naming it: ask for NDJSON or Arrow (streamed, no bound) or give limit.",
    )
    http_max_streams: int = setting(
        32,
        "Most change streams (/changes) open at once; one more is refused (503) naming it.",
    )
    http_max_requests: int = setting(
        16,
        "Most other requests answered at once (each a thread, a Redis connection and, for "
        "rows, the rows it read); one more is refused (503) naming it.",
    )
    http_request_timeout_s: float = setting(
        30.0,
        "How long a request may take to read its answer (rows, status, replicas) before "
        "it is refused (504) naming it; a read meets a Redis failover patiently until then. "
        "Also how long a client may leave a write to it unread before its connection is "
        "closed.",
    )
    http_keepalive_s: float = setting(
        15.0,
        "A change stream without changes sends a comment this often, so proxies and "
        "clients keep it open and a client that went away is noticed.",
    )


@dataclasses.dataclass(frozen=True)
class SinkConfig:
    """`sinks run`: a collection's changes to a Kafka topic (docs/concepts/sinks.md)."""

    sink_metrics_address: str = setting(
        "",
        "host:port where `sinks run` serves /metrics, /healthz and /readyz (port 0: any free "
        "one, printed at start); empty: no listener.",
    )
    sink_poll_interval_ms: int = setting(
        200,
        "How often a sink asks its collection for changes when it found none: a change "
        "reaches the sink's topic 0 to this long after it is readable in Redis.",
    )
    sink_max_transaction_changes: int = setting(
        100_000,
        "Most changes of one Kafka transaction. An unbucketed collection's changes are cut "
        "at time boundaries into transactions of at most this many; a bucketed "
        "collection's step (from one consistent cut to the next) is one transaction, and "
        "a sink that fell behind by more stops, saying so (docs/concepts/sinks.md).",
    )
