"""Kafka client security (TLS, SASL) for every client of this project and for Spark.

The settings use librdkafka's names (``security.protocol``, ``sasl.mechanism``, ...), come
from a properties file (``CM_KAFKA_PROPERTIES_FILE``) and ``CM_KAFKA_*`` settings over it,
and are checked once here, so a wrong one fails with a line that names it instead of a
client that cannot connect. ``spark_options`` says the same to the Java client that
Spark's Kafka source runs. Credentials never appear in ``repr`` or ``describe``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType

from collection_manager.config import ConfigError, InfraConfig, env_name, from_env

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# The Java login module of each SASL mechanism (sasl.jaas.config).
LOGIN_MODULES: Mapping[str, str] = MappingProxyType(
    {
        "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
        "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
        "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
    }
)
# Each name, and the InfraConfig field that overrides the properties file.
FIELDS: Mapping[str, str] = MappingProxyType(
    {
        "security.protocol": "kafka_security_protocol",
        "sasl.mechanism": "kafka_sasl_mechanism",
        "sasl.username": "kafka_sasl_username",
        "sasl.password": "kafka_sasl_password",
        "ssl.ca.location": "kafka_ssl_ca_location",
        "ssl.certificate.location": "kafka_ssl_certificate_location",
        "ssl.key.location": "kafka_ssl_key_location",
    }
)
_FILES = ("ssl.ca.location", "ssl.certificate.location", "ssl.key.location")


@dataclasses.dataclass(frozen=True)
class KafkaSecurity:
    """Checked security settings: librdkafka's names and values (none for PLAINTEXT)."""

    settings: Mapping[str, str] = dataclasses.field(default_factory=dict, repr=False)

    @property
    def protocol(self) -> str:
        return self.settings.get("security.protocol", "PLAINTEXT")

    def client_settings(self, bootstrap: str) -> dict[str, str]:
        """The options of a confluent-kafka client of ``bootstrap``."""
        return {"bootstrap.servers": bootstrap, **self.settings}

    def describe(self) -> str:
        """What is in use, without credentials: for logs and ``status``."""
        parts = [self.protocol]
        if "sasl.mechanism" in self.settings:
            parts.append(f"{self.settings['sasl.mechanism']} as {self.settings['sasl.username']}")
        if "ssl.ca.location" in self.settings:
            parts.append(f"CA {self.settings['ssl.ca.location']}")
        if "ssl.certificate.location" in self.settings:
            parts.append(f"client certificate {self.settings['ssl.certificate.location']}")
        return ", ".join(parts)

    def spark_options(self, read_text: Mapping[str, str]) -> dict[str, str]:
        """The same settings as Spark's ``kafka.``-prefixed source options (Java client names).

        Args:
            read_text: the text of each certificate and key file by path; the Java client
                takes a client certificate and key as PEM text (the CA as a file).
        """
        found = self.settings
        options = {"kafka.security.protocol": self.protocol}
        if "sasl.mechanism" in found:
            mechanism = found["sasl.mechanism"]
            options["kafka.sasl.mechanism"] = mechanism
            options["kafka.sasl.jaas.config"] = (
                f"{LOGIN_MODULES[mechanism]} required "
                f'username="{_quoted(found["sasl.username"])}" '
                f'password="{_quoted(found["sasl.password"])}";'
            )
        if "ssl.ca.location" in found:
            options["kafka.ssl.truststore.type"] = "PEM"
            options["kafka.ssl.truststore.location"] = found["ssl.ca.location"]
        if "ssl.certificate.location" in found:
            options["kafka.ssl.keystore.type"] = "PEM"
            options["kafka.ssl.keystore.certificate.chain"] = read_text[
                found["ssl.certificate.location"]
            ]
            options["kafka.ssl.keystore.key"] = read_text[found["ssl.key.location"]]
        return options

    def files(self) -> list[str]:
        """The certificate and key files these settings name."""
        return [self.settings[name] for name in _FILES if name in self.settings]


def _quoted(value: str) -> str:
    # JAAS configuration: a double-quoted string, backslash escapes.
    return value.replace("\\", "\\\\").replace('"', '\\"')


def parse_properties(text: str, source: str) -> dict[str, str]:
    """``name=value`` lines (``#`` comments, blank lines) of a properties file.

    Raises:
        ConfigError: naming the line that is not ``name=value`` or names no known setting.
    """
    found: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        name, equals, value = stripped.partition("=")
        name = name.strip()
        if not equals:
            raise ConfigError(f"{source} line {number}: expected name=value")
        if name not in FIELDS:
            raise ConfigError(
                f"{source} line {number}: unknown setting {name!r}; known: {', '.join(FIELDS)}"
            )
        found[name] = value.strip()
    return found


def check(given: Mapping[str, str]) -> KafkaSecurity:
    """Checks that the settings fit together; ``given`` names them as librdkafka does.

    Raises:
        ConfigError: naming the setting that is missing, unknown or does not fit.
    """
    settings = {name: value for name, value in given.items() if value != ""}
    protocol = settings.get("security.protocol", "PLAINTEXT").upper()
    if protocol not in PROTOCOLS:
        raise ConfigError(
            f"{_name('security.protocol')}={protocol!r} is not one of {', '.join(PROTOCOLS)}"
        )
    settings["security.protocol"] = protocol
    sasl = [name for name in settings if name.startswith("sasl.")]
    if protocol.startswith("SASL_"):
        mechanism = settings.get("sasl.mechanism", "").upper()
        if mechanism not in LOGIN_MODULES:
            raise ConfigError(
                f"{_name('sasl.mechanism')}={mechanism!r} is not one of "
                f"{', '.join(LOGIN_MODULES)} (needed by security.protocol={protocol})"
            )
        settings["sasl.mechanism"] = mechanism
        for name in ("sasl.username", "sasl.password"):
            if name not in settings:
                raise ConfigError(f"{_name(name)} is needed by security.protocol={protocol}")
    elif sasl:
        raise ConfigError(f"{_name(sasl[0])} is set but security.protocol={protocol} has no SASL")
    ssl = [name for name in settings if name.startswith("ssl.")]
    if ssl and not protocol.endswith("SSL"):
        raise ConfigError(f"{_name(ssl[0])} is set but security.protocol={protocol} has no TLS")
    if ("ssl.certificate.location" in settings) != ("ssl.key.location" in settings):
        raise ConfigError(
            f"{_name('ssl.certificate.location')} and {_name('ssl.key.location')} "
            "go together: set both or neither"
        )
    if protocol == "PLAINTEXT":
        settings = {}
    return KafkaSecurity(MappingProxyType(settings))


def _name(setting: str) -> str:
    return f"{setting} ({env_name(FIELDS[setting])})"


def load(config: InfraConfig) -> KafkaSecurity:
    """The checked security settings of ``config``: its properties file, then its settings.

    Raises:
        ConfigError: a setting is wrong, or a file it names cannot be read.
    """
    given: dict[str, str] = {}
    properties = config.kafka_properties_file
    if properties is not None:
        text = _read(properties, env_name("kafka_properties_file"))
        given.update(parse_properties(text, str(properties)))
    for name, field in FIELDS.items():
        value = getattr(config, field)
        if value is not None:
            given[name] = str(value)
    security = check(given)
    for name in _FILES:
        if name in security.settings:
            _read(Path(security.settings[name]), _name(name))
    return security


def from_environment() -> KafkaSecurity:
    """This process's security settings (``CM_*`` environment): every driver-side client's.

    Executors do not read them: they get the driver's in their settings (``ExecutorSettings``).
    """
    return load(from_env(InfraConfig))


def spark_options(config: InfraConfig) -> dict[str, str]:
    """``load(config)`` as Spark's Kafka source options."""
    security = load(config)
    return security.spark_options({path: Path(path).read_text() for path in security.files()})


def _read(path: Path, what: str) -> str:
    try:
        return path.read_text()
    except OSError as exc:
        raise ConfigError(f"{what}: cannot read {path}: {exc.strerror}") from exc
