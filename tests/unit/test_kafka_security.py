"""Kafka client security settings: checked once, said to librdkafka and to Spark's Java client."""

from __future__ import annotations

from pathlib import Path

import pytest

from collection_manager.config import ConfigError, InfraConfig, from_env
from collection_manager.kafka.producer import ProducerConfig
from collection_manager.kafka.security import (
    KafkaSecurity,
    check,
    load,
    parse_properties,
    spark_options,
)

SCRAM = {
    "security.protocol": "sasl_ssl",
    "sasl.mechanism": "scram-sha-512",
    "sasl.username": "alice",
    "sasl.password": 'pa"ss\\word',
    "ssl.ca.location": "/etc/cm/ca.pem",
}


def test_plaintext_needs_nothing_and_adds_nothing() -> None:
    assert check({}).client_settings("k:9092") == {"bootstrap.servers": "k:9092"}
    assert check({"security.protocol": "PLAINTEXT"}).settings == {}
    assert check({}).spark_options({}) == {"kafka.security.protocol": "PLAINTEXT"}


def test_sasl_ssl_reaches_librdkafka_and_the_java_client_of_spark() -> None:
    security = check(SCRAM)
    assert security.client_settings("k:9093") == {
        "bootstrap.servers": "k:9093",
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": 'pa"ss\\word',
        "ssl.ca.location": "/etc/cm/ca.pem",
    }
    assert security.spark_options({}) == {
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
        'required username="alice" password="pa\\"ss\\\\word";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": "/etc/cm/ca.pem",
    }


def test_a_client_certificate_goes_to_spark_as_pem_text() -> None:
    security = check(
        {
            "security.protocol": "SSL",
            "ssl.ca.location": "ca.pem",
            "ssl.certificate.location": "me.pem",
            "ssl.key.location": "me.key",
        }
    )
    options = security.spark_options({"me.pem": "CERT", "me.key": "KEY"})
    assert options["kafka.ssl.keystore.type"] == "PEM"
    assert options["kafka.ssl.keystore.certificate.chain"] == "CERT"
    assert options["kafka.ssl.keystore.key"] == "KEY"
    assert security.files() == ["ca.pem", "me.pem", "me.key"]


def test_credentials_never_show_in_repr_or_describe() -> None:
    security = check(SCRAM)
    assert "word" not in repr(security) and "word" not in security.describe()
    assert security.describe() == "SASL_SSL, SCRAM-SHA-512 as alice, CA /etc/cm/ca.pem"
    config = InfraConfig(kafka_sasl_password="hunter2")
    assert "hunter2" not in repr(config)
    producer = ProducerConfig("k:9093", security=security.settings)
    assert "word" not in repr(producer)
    assert producer.redacted()["sasl.password"] == "***"
    assert producer.to_librdkafka()["sasl.password"] == 'pa"ss\\word'


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"security.protocol": "TLS"}, r"security.protocol \(CM_KAFKA_SECURITY_PROTOCOL\)="
         r"'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL"),
        ({"security.protocol": "SASL_SSL", "sasl.username": "a", "sasl.password": "p"},
         r"sasl.mechanism \(CM_KAFKA_SASL_MECHANISM\)='' is not one of PLAIN, SCRAM-SHA-256"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a"},
         r"sasl.password \(CM_KAFKA_SASL_PASSWORD\) is needed by security.protocol"),
        ({"sasl.username": "a"},
         r"sasl.username \(CM_KAFKA_SASL_USERNAME\) is set but security.protocol=PLAINTEXT"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN", "sasl.username": "a",
          "sasl.password": "p", "ssl.ca.location": "ca.pem"},
         r"ssl.ca.location .* is set but security.protocol=SASL_PLAINTEXT has no TLS"),
        ({"security.protocol": "SSL", "ssl.certificate.location": "me.pem"},
         r"ssl.certificate.location .* and ssl.key.location .* go together"),
    ],
)  # fmt: skip
def test_settings_that_do_not_fit_name_the_setting(given: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check(given)


def test_a_properties_file_is_read_and_the_settings_override_it(tmp_path: Path) -> None:
    ca = tmp_path / "ca.pem"
    ca.write_text("CA")
    properties = tmp_path / "kafka.properties"
    properties.write_text(
        "# the brokers of the fleet\n\nsecurity.protocol = SASL_SSL\nsasl.mechanism=PLAIN\n"
        f"sasl.username=from-file\nsasl.password=a=b\nssl.ca.location={ca}\n"
    )
    environ = {"CM_KAFKA_PROPERTIES_FILE": str(properties), "CM_KAFKA_SASL_USERNAME": "bob"}
    security = load(from_env(InfraConfig, environ))
    assert security.settings["sasl.username"] == "bob"
    assert security.settings["sasl.password"] == "a=b"  # only the first '=' separates
    assert spark_options(from_env(InfraConfig, environ))["kafka.ssl.truststore.location"] == str(ca)


def test_a_bad_properties_file_names_its_line_and_a_missing_file_its_setting(
    tmp_path: Path,
) -> None:
    with pytest.raises(ConfigError, match=r"f line 2: unknown setting 'sasl.jaas.config'; known"):
        parse_properties("security.protocol=SSL\nsasl.jaas.config=x\n", "f")
    with pytest.raises(ConfigError, match=r"f line 1: expected name=value"):
        parse_properties("security.protocol\n", "f")
    missing = tmp_path / "nowhere.pem"
    environ = {"CM_KAFKA_SECURITY_PROTOCOL": "SSL", "CM_KAFKA_SSL_CA_LOCATION": str(missing)}
    with pytest.raises(ConfigError, match=rf"CM_KAFKA_SSL_CA_LOCATION\): cannot read {missing}"):
        load(from_env(InfraConfig, environ))


def test_an_empty_security_is_plaintext() -> None:
    assert KafkaSecurity().protocol == "PLAINTEXT"
