"""Processes an operator can watch: a real Prometheus scrapes the consumer, the controller
and an agent and counts exactly what was applied; the consumer's /readyz fails while Redis
is away and recovers after; ``status`` tells a SIGKILLed consumer or controller from a
running one within the heartbeat's expiry, and the consumer-down alert fires."""

from __future__ import annotations

import dataclasses
import json
import math
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from prometheus_client.parser import text_string_to_metric_families

from collection_manager.core.requests import Append
from collection_manager.devservices.processes import free_port
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.heartbeats import ALIVE_EXPIRY_S
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from schemas.introspection import introspection_spec
from tests.integration.consumer_process import consumer_env, kill, run_cli, start_consumer
from tests.integration.local_prometheus import LocalPrometheus
from tests.integration.own_services import OwnService
from tests.support import assert_eventually, http_get

REQUESTS = 5


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


def test_prometheus_scrapes_every_process_and_status_and_readiness_tell_the_truth(
    kafka: str, own_service: Callable[[str], OwnService], unique: str, tmp_path: Path
) -> None:
    """A real Prometheus scrapes the consumer, the controller and an agent. It counts
    exactly the requests sent and the one dead letter, and sees the lag back at 0 and the
    dead-letter alert fire; the consumer's /readyz fails while
    Redis is away and recovers; a SIGKILLed consumer is ``stopped`` in ``status`` and makes
    the consumer-down alert fire."""
    redis_server = own_service("redis")
    url = redis_server.address
    store = RedisStore.connect(url)
    spec = dataclasses.replace(introspection_spec("error_counts"), name=f"ec-{unique}")
    store.create_collection(spec)
    topic = f"watched-{unique}"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(30)
    consumer_at, controller_at, agent_at = (f"127.0.0.1:{free_port()}" for _ in range(3))
    env = consumer_env(kafka, url, topic, tmp_path) | {
        "CM_CONSUMER_METRICS_ADDRESS": consumer_at,
        "CM_COMMIT_GROUP": f"group-{unique}",
    }
    log = tmp_path / "consumer.log"
    consumer = start_consumer(env, log)
    cli_env = {"CM_REDIS_URL": url, "CM_KAFKA_BOOTSTRAP": kafka, "CM_TOPIC": topic}
    jobs = {"cm-consumer": [consumer_at], "cm-controller": [controller_at], "cm-agent": [agent_at]}
    prometheus = LocalPrometheus(tmp_path / "prometheus", jobs)
    others: list[subprocess.Popen[bytes]] = []
    base = f"http://{consumer_at}"
    try:
        assert_eventually(lambda: _ready(base), timeout=120, interval=0.5)
        applied_total = f'cm_consumer_requests_applied_total{{collection="{spec.name}"}}'
        assert prometheus.value(applied_total) is None  # nothing applied to it yet
        producer = KafkaProducer(ProducerConfig(kafka))
        rows = [(f"r{i}", "e1", i) for i in range(REQUESTS)]
        for row in rows:
            append = Append(spec.name, row[0], 1, ((row, 1),), produced_at=0)
            producer.produce(topic, spec.name.encode(), encode_request(append))
        producer.produce(topic, spec.name.encode(), b"not a request")  # one dead letter
        producer.close()

        def counted() -> None:
            assert consumer.poll() is None, log.read_text()[-3000:]
            assert prometheus.value(applied_total) == REQUESTS
            visible = f'cm_consumer_publish_to_visible_seconds_count{{topic="{topic}"}}'
            assert (prometheus.value(visible) or 0) >= 1
            assert prometheus.value(f'sum(cm_consumer_lag_records{{topic="{topic}"}})') == 0
            dead = f'sum(cm_consumer_dead_letters_by_kind_total{{topic="{topic}"}})'
            assert prometheus.value(dead) == 1
            # Read from Redis every 10 s: no rewind, no delete in progress here.
            assert prometheus.value(f'cm_consumer_rewinds{{topic="{topic}"}}') == 0
            assert prometheus.value("cm_consumer_deletes_in_progress") == 0

        assert_eventually(counted, timeout=120, interval=0.5)
        assert store.snapshot(spec.name).rows == {row: 1 for row in rows}
        # The group the ecosystem's lag tools read is at the end of every partition.
        ends = _end_offsets(kafka, topic)

        def committed() -> None:
            assert _group_offsets(admin, f"group-{unique}", topic) == ends

        assert_eventually(committed, timeout=30, interval=0.5)
        assert http_get(base + "/healthz") == (200, "ok\n")
        seen = _status(cli_env)["consumer"]
        assert (seen["state"], seen["pid"]) == ("running", consumer.pid)

        with redis_server.down():

            def not_ready() -> None:
                status, reasons = http_get(base + "/readyz")
                assert (status, reasons.startswith("outage: ")) == (503, True), reasons

            assert_eventually(not_ready, timeout=60, interval=0.2)
            assert http_get(base + "/healthz") == (200, "ok\n")  # waiting is its job: alive

        assert_eventually(lambda: _ready(base), timeout=120, interval=0.5)

        others.append(
            _cli(["controller", "run"], cli_env, CM_CONTROLLER_METRICS_ADDRESS=controller_at)
        )
        others.append(
            _cli(["replicas", "run", "--id", "r1"], cli_env, CM_AGENT_METRICS_ADDRESS=agent_at)
        )

        def all_scraped() -> None:
            assert {r["metric"]["job"] for r in prometheus.query("up == 1")} == set(jobs)
            assert (prometheus.value("sum(cm_agent_requests_delivered_total)") or 0) > 0
            assert (prometheus.value("cm_controller_lease_checks_total") or 0) > 0
            assert prometheus.value('cm_controller_replicas{state="active"}') == 1
            # Inside the wait: the controller-down alert fires when the steps above outlast
            # its minute, and resolves at the first rule evaluation after a good scrape.
            assert prometheus.firing() == {"CollectionManagerDeadLetters"}

        assert_eventually(all_scraped, timeout=120, interval=0.5)

        kill(consumer)

        def stopped_and_alerted() -> None:
            assert _status(cli_env)["consumer"]["state"] == "stopped"
            assert "CollectionManagerConsumerDown" in prometheus.firing()

        assert_eventually(stopped_and_alerted, timeout=ALIVE_EXPIRY_S + 15, interval=1)
    finally:
        for process in others:
            process.send_signal(signal.SIGTERM)
        for process in others:
            _reaped(process)
        if consumer.poll() is None:
            kill(consumer)
        prometheus.stop()
        admin.delete_topics([topic])
    assert "Traceback" not in log.read_text()


def _group_offsets(admin: AdminClient, group: str, topic: str) -> dict[int, int]:
    request = [ConsumerGroupTopicPartitions(group)]
    listed = admin.list_consumer_group_offsets(request)[group].result(30)
    return {tp.partition: tp.offset for tp in listed.topic_partitions if tp.topic == topic}


def _end_offsets(kafka: str, topic: str) -> dict[int, int]:
    """The end offset of each partition of ``topic`` that holds records."""
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": "end-offsets"})
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in (0, 1)}
    finally:
        consumer.close()
    return {partition: end for partition, end in ends.items() if end > 0}


def _cli(argv: list[str], env: dict[str, str], **more: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "collection_manager.cli.main", *argv],
        env={**os.environ, **env, **more},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def _reaped(process: subprocess.Popen[bytes]) -> None:
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


def _ready(base: str) -> None:
    assert http_get(base + "/readyz") == (200, "ok\n")


def test_the_controller_serves_metrics_and_status_tells_it_from_a_killed_one(
    kafka: str, own_service: Callable[[str], OwnService], unique: str
) -> None:
    url = own_service("redis").address
    env = {"CM_REDIS_URL": url, "CM_KAFKA_BOOTSTRAP": kafka, "CM_TOPIC": f"ctl-{unique}"}
    address = f"127.0.0.1:{free_port()}"
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
        assert http_get(f"http://{address}/readyz") == (200, "ok\n")
        status, metrics = http_get(f"http://{address}/metrics")
        assert status == 200
        assert (_sample(metrics, "cm_controller_lease_checks_total", {}) or 0) > 0
        assert _sample(metrics, "cm_controller_replicas", {"state": "active"}) == 0
        # No replica: no lease can run out.
        assert _sample(metrics, "cm_controller_lease_left_min_seconds", {}) == math.inf
        controller.send_signal(signal.SIGKILL)
        controller.wait(30)

        def stopped() -> None:
            assert _status(env)["controller"]["state"] == "stopped"

        assert_eventually(stopped, timeout=ALIVE_EXPIRY_S + 10, interval=1)
    finally:
        if controller.poll() is None:
            controller.kill()
            controller.wait(30)
