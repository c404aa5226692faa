"""Processes an operator can watch: the consumer's /metrics count what it applied, its
/readyz fails while Redis is away and recovers after, and ``status`` tells a SIGKILLed
consumer or controller from a running one within the heartbeat's expiry."""

from __future__ import annotations

import dataclasses
import json
import os
import signal
import socket
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from collection_manager.core.requests import Append
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.heartbeats import ALIVE_EXPIRY_S
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from schemas.introspection import introspection_spec
from tests.integration.consumer_process import consumer_env, kill, run_cli, start_consumer
from tests.integration.own_services import OwnService
from tests.support import assert_eventually

REQUESTS = 5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()


def _sample(metrics: str, name: str, labels: dict[str, str]) -> float | None:
    for family in text_string_to_metric_families(metrics):
        for sample in family.samples:
            if sample.name == name and labels.items() <= sample.labels.items():
                return float(sample.value)
    return None


def _status(env: dict[str, str]) -> dict[str, Any]:
    done = run_cli(["status", "--format", "json"], 60, **env)
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout))


def test_the_consumer_serves_metrics_and_readiness_and_status_sees_it_die(
    kafka: str, own_service: Callable[[str], OwnService], unique: str, tmp_path: Path
) -> None:
    redis_server = own_service("redis")
    url = redis_server.address
    store = RedisStore.connect(url)
    spec = dataclasses.replace(introspection_spec("error_counts"), name=f"ec-{unique}")
    store.create_collection(spec)
    topic = f"watched-{unique}"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(30)
    address = f"127.0.0.1:{_free_port()}"
    env = consumer_env(kafka, url, topic, tmp_path) | {"CM_CONSUMER_METRICS_ADDRESS": address}
    log = tmp_path / "consumer.log"
    consumer = start_consumer(env, log)
    cli_env = {"CM_REDIS_URL": url, "CM_KAFKA_BOOTSTRAP": kafka, "CM_TOPIC": topic}
    base = f"http://{address}"
    try:
        producer = KafkaProducer(ProducerConfig(kafka))
        rows = [(f"r{i}", "e1", i) for i in range(REQUESTS)]
        for row in rows:
            append = Append(spec.name, row[0], 1, ((row, 1),), produced_at=0)
            producer.produce(topic, spec.name.encode(), encode_request(append))
        producer.close()

        def applied() -> None:
            assert consumer.poll() is None, log.read_text()[-3000:]
            assert store.snapshot(spec.name).rows == {row: 1 for row in rows}

        assert_eventually(applied, timeout=120, interval=0.2)

        def counted() -> None:
            status, metrics = _get(base + "/metrics")
            labels = {"topic": topic, "collection": spec.name}
            assert status == 200
            assert _sample(metrics, "cm_consumer_requests_applied_total", labels) == REQUESTS
            seen = _sample(
                metrics, "cm_consumer_publish_to_visible_seconds_count", {"topic": topic}
            )
            assert (seen or 0) >= 1
            assert _get(base + "/readyz") == (200, "ok\n")

        assert_eventually(counted, timeout=30)
        assert _get(base + "/healthz") == (200, "ok\n")
        seen = _status(cli_env)["consumer"]
        assert (seen["state"], seen["pid"]) == ("running", consumer.pid)

        with redis_server.down():

            def not_ready() -> None:
                status, reasons = _get(base + "/readyz")
                assert (status, reasons.startswith("outage: ")) == (503, True), reasons

            assert_eventually(not_ready, timeout=60, interval=0.2)
            assert _get(base + "/healthz") == (200, "ok\n")  # waiting is its job: alive

        assert_eventually(lambda: _ready(base), timeout=120, interval=0.5)
        kill(consumer)

        def stopped() -> None:
            assert _status(cli_env)["consumer"]["state"] == "stopped"

        assert_eventually(stopped, timeout=ALIVE_EXPIRY_S + 10, interval=1)
    finally:
        if consumer.poll() is None:
            kill(consumer)
        admin.delete_topics([topic])
    assert "Traceback" not in log.read_text()


def _ready(base: str) -> None:
    assert _get(base + "/readyz") == (200, "ok\n")


def test_the_controller_serves_metrics_and_status_tells_it_from_a_killed_one(
    kafka: str, own_service: Callable[[str], OwnService], unique: str
) -> None:
    url = own_service("redis").address
    env = {"CM_REDIS_URL": url, "CM_KAFKA_BOOTSTRAP": kafka, "CM_TOPIC": f"ctl-{unique}"}
    address = f"127.0.0.1:{_free_port()}"
    controller = subprocess.Popen(
        [sys.executable, "-m", "collection_manager.cli.main", "controller", "run"],
        env={**os.environ, **env, "CM_CONTROLLER_METRICS_ADDRESS": address},
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        assert _status(env)["controller"]["state"] in ("unknown", "running")

        def checking() -> None:
            seen = _status(env)["controller"]
            assert (seen["state"], seen["pid"]) == ("running", controller.pid)
            assert seen["last_check_ms"] is not None

        assert_eventually(checking, timeout=60, interval=0.5)
        assert _get(f"http://{address}/readyz") == (200, "ok\n")
        status, metrics = _get(f"http://{address}/metrics")
        assert status == 200
        assert (_sample(metrics, "cm_controller_lease_checks_total", {}) or 0) > 0
        assert _sample(metrics, "cm_controller_replicas", {"state": "active"}) == 0
        controller.send_signal(signal.SIGKILL)
        controller.wait(30)

        def stopped() -> None:
            assert _status(env)["controller"]["state"] == "stopped"

        assert_eventually(stopped, timeout=ALIVE_EXPIRY_S + 10, interval=1)
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait(30)
