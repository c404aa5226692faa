"""The pipeline on secured services, as users run it beside a fleet: Kafka over SASL_SSL
(SCRAM-SHA-512, client certificates required) and Redis over TLS only, with an ACL user.

The certificates are made by the test. Every Kafka client gets the security settings from
one properties file (``CM_KAFKA_PROPERTIES_FILE``): the consumer's Spark source, its broker
probe and dead-letter producer, the agents, the controller, the test's own producers and
``status``. Redis gets its user, password and TLS files in its ``rediss://`` URL. Only the
test reads the topic in Kafka order over the broker's plaintext listener, for the model.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import run_cli
from tests.integration.pipeline_run import pipeline_under_load
from tests.integration.secured_services import (
    Certificates,
    SecuredKafka,
    make_certificates,
    secured_kafka,
    secured_redis,
)
from tests.integration.workload import assert_caught_up_with_the_model, create_specs
from tests.support import assert_eventually

KAFKA_USER, KAFKA_PASSWORD = "cm-consumer", "kafka-pw-4f1d9c"
REDIS_USER, REDIS_PASSWORD = "cm-store", "redis-pw-77e2ab"
NOT_A_REQUEST = b"\x00 not a request: a dead letter sent on purpose"


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> Certificates:
    return make_certificates(tmp_path_factory.mktemp("certificates"))


@pytest.fixture(scope="module")
def kafka_listeners(
    certificates: Certificates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SecuredKafka]:
    home = tmp_path_factory.mktemp("secured-kafka")
    with secured_kafka(certificates, {KAFKA_USER: KAFKA_PASSWORD}, home) as found:
        yield found


@pytest.fixture(scope="module")
def redis_url(
    certificates: Certificates, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    home = tmp_path_factory.mktemp("secured-redis")
    with secured_redis(certificates, REDIS_USER, REDIS_PASSWORD, home) as url:
        yield url


def _write_properties(path: Path, certificates: Certificates, password: str) -> Path:
    path.write_text(
        "# The fleet's brokers: SCRAM over TLS, with this client's certificate.\n"
        "security.protocol=SASL_SSL\nsasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.username={KAFKA_USER}\nsasl.password={password}\n"
        f"ssl.ca.location={certificates.ca}\n"
        f"ssl.certificate.location={certificates.client_certificate}\n"
        f"ssl.key.location={certificates.client_key}\n"
    )
    return path


@pytest.fixture
def kafka_properties(
    certificates: Certificates, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """The properties file, set for this process (agents, controller, producers) and its
    children (the consumer, the CLI)."""
    path = _write_properties(tmp_path / "kafka.properties", certificates, KAFKA_PASSWORD)
    monkeypatch.setenv("CM_KAFKA_PROPERTIES_FILE", str(path))
    return path


def _records(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"{topic}-count"})
    try:
        return sum(
            high - low
            for low, high in (
                consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
                for partition in consumer.list_topics(topic, 10).topics[topic].partitions
            )
        )
    finally:
        consumer.close()


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_the_pipeline_applies_exactly_once_through_sasl_ssl_kafka_and_tls_redis(
    kafka_listeners: SecuredKafka,
    redis_url: str,
    kafka_properties: Path,
    unique: str,
    tmp_path: Path,
) -> None:
    secured, plaintext = kafka_listeners.secured, kafka_listeners.plaintext
    topic = f"t-{unique}"
    admin = AdminClient({"bootstrap.servers": plaintext})
    admin.create_topics([NewTopic(topic, num_partitions=4)])[topic].result(30)
    store = RedisStore.connect(redis_url)
    specs = create_specs(store, unique)
    with pipeline_under_load(secured, redis_url, topic, unique, specs, tmp_path) as run:
        odd = KafkaProducer(ProducerConfig(secured, client_id="test-dead-letter"))
        odd.produce(topic, b"odd", NOT_A_REQUEST)
        assert odd.close(30) == 0
        assert_eventually(run.fleet.leased, timeout=180, interval=0.5)
        run.stop_producing()
        assert_eventually(lambda: run.fleet.assert_redis_holds_what_the_agents_report(store), 180)
        assert_caught_up_with_the_model(
            plaintext, topic, specs + run.fleet.specs, store, run.consumer, run.consumer_log,
            run.fleet.refreshed(), skip={NOT_A_REQUEST},
        )  # fmt: skip
        # The executors' dead-letter producer got the driver's settings.
        assert_eventually(lambda: _assert_equal(_records(plaintext, f"{topic}-dead"), 1), 60)
        status = run_cli(["status", "--topic", topic, "--format", "json"], **run.env)
        assert status.returncode == 0, status.stderr
        assert '"kafka": "reachable"' in status.stdout.replace("'", '"'), status.stdout
        run.consumer.send_signal(signal.SIGTERM)
        assert run.consumer.wait(60) == 0, run.consumer_log()[-3000:]
    output = run.consumer_log() + status.stdout + status.stderr
    assert KAFKA_PASSWORD not in output and REDIS_PASSWORD not in output


def _assert_equal(found: int, expected: int) -> None:
    assert found == expected


def test_wrong_credentials_end_with_one_line_that_names_the_fault_not_the_secret(
    kafka_listeners: SecuredKafka, redis_url: str, certificates: Certificates, tmp_path: Path
) -> None:
    wrong = "wrong-pw-0b5e"
    done = run_cli(
        ["collections", "query", "error_counts"],
        CM_REDIS_URL=redis_url.replace(REDIS_PASSWORD, wrong),
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert "refused the user and password in CM_REDIS_URL" in done.stderr, done.stderr
    assert wrong not in done.stderr + done.stdout and "Traceback" not in done.stderr

    properties = _write_properties(tmp_path / "wrong.properties", certificates, wrong)
    done = run_cli(
        ["status", "--format", "json"],
        CM_REDIS_URL=redis_url,
        CM_KAFKA_BOOTSTRAP=kafka_listeners.secured,
        CM_KAFKA_PROPERTIES_FILE=str(properties),
    )
    assert done.returncode == 0, done.stderr
    assert '"kafka": "unreachable"' in done.stdout, done.stdout
    assert wrong not in done.stderr + done.stdout and "Traceback" not in done.stderr

    done = run_cli(
        ["status"],
        CM_REDIS_URL=redis_url,
        CM_KAFKA_BOOTSTRAP=kafka_listeners.secured,
        CM_KAFKA_SECURITY_PROTOCOL="SASL_SSL",
    )
    assert done.returncode == 1 and done.stderr.count("\n") == 1, done.stderr
    assert "sasl.mechanism (CM_KAFKA_SASL_MECHANISM)" in done.stderr, done.stderr
