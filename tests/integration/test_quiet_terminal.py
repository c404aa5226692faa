"""At the default verbosity a long-running process prints the product's own lines only:
its ready line, and an outage's beginning and end; no Spark, Kafka or py4j warnings, no
Java or Python stack traces. A restart after a dead letter draws no warning about the
dead-letter topic, which the consumer created for messages as large as any request."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer

from collection_manager.devservices import Endpoints
from collection_manager.kafka.message_limits import max_message_bytes
from spark_consumers.dead_letter_producer import producer_max_bytes
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.own_services import OwnService
from tests.support import assert_eventually

# In make test-slow, not make test: consumers, agents and faults of their own, about 50 s
# each; in make test, the second session (test_second_session.py) checks a quiet start.
pytestmark = pytest.mark.slow

# What a user must not see at the default verbosity.
NOISE = re.compile(r"WARN|Traceback|^\s+at (org|java)\.|Exception", re.MULTILINE)
READY = "consumer running:"
AGENT = [sys.executable, "-m", "collection_manager.cli.main", "replicas", "run"]


def _noise(log: Path) -> list[str]:
    text = log.read_text()
    return [line for line in text.splitlines() if NOISE.search(line)]


def _start_agent(env: dict[str, str], replica_id: str, log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [*AGENT, "--id", replica_id],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _printed(log: Path, text: str, times: int = 1) -> Callable[[], None]:
    def check() -> None:
        assert log.read_text().count(text) >= times, log.read_text()[-3000:]

    return check


@pytest.fixture
def processes() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            kill(process)


def _env(kafka: str, redis_url: str, unique: str, tmp_path: Path) -> dict[str, str]:
    topic = f"t-{unique}"
    env = consumer_env(kafka, redis_url, topic, tmp_path)
    env["CM_REPLICA_NAMESPACE"] = f"cm:replicas:{unique}"
    return env


def test_consumer_and_agent_print_only_their_lines_and_a_dead_letter_topic_fits(
    kafka: str,
    endpoints: Endpoints,
    unique: str,
    tmp_path: Path,
    processes: list[subprocess.Popen[bytes]],
) -> None:
    env = _env(kafka, endpoints.redis_url, unique, tmp_path)
    topic, dead_topic = env["CM_TOPIC"], env["CM_DEAD_LETTER_TOPIC"]
    consumer_log, agent_log = tmp_path / "consumer.log", tmp_path / "agent.log"
    # The topic does not exist yet: the consumer waits for it, the agent's requests make it.
    processes.append(start_consumer(env, consumer_log))
    processes.append(_start_agent(env, "r1", agent_log))
    assert_eventually(_printed(agent_log, "replica r1 running at epoch"), 120, interval=0.5)
    assert_eventually(_printed(consumer_log, READY), 180, interval=0.5)
    producer = Producer({"bootstrap.servers": kafka})
    producer.produce(topic, key=b"x", value=b"not a request")
    assert producer.flush(30) == 0
    assert_eventually(lambda: _read_one(kafka, dead_topic), 120, interval=1)
    request_max = max_message_bytes(kafka, [topic])[topic]
    assert max_message_bytes(kafka, [dead_topic])[dead_topic] == producer_max_bytes(request_max)
    # A restart, with a dead letter in its topic: nothing to warn about.
    consumer = processes[0]
    consumer.send_signal(signal.SIGTERM)
    assert consumer.wait(60) == 0, consumer_log.read_text()[-3000:]
    processes.append(start_consumer(env, consumer_log))
    assert_eventually(_printed(consumer_log, READY, times=2), 180, interval=0.5)
    assert _noise(consumer_log) == [], consumer_log.read_text()
    assert _noise(agent_log) == [], agent_log.read_text()


def _read_one(kafka: str, topic: str) -> None:
    reader = Consumer(
        {"bootstrap.servers": kafka, "group.id": f"g-{topic}", "auto.offset.reset": "earliest"}
    )
    try:
        reader.subscribe([topic])
        message = reader.poll(5)
        assert message is not None and message.error() is None, message
    finally:
        reader.close()


def test_an_outage_is_one_line_when_it_begins_and_one_when_it_ends(
    own_service: Callable[[str], OwnService],
    unique: str,
    tmp_path: Path,
    processes: list[subprocess.Popen[bytes]],
) -> None:
    own_kafka, own_redis = own_service("kafka"), own_service("redis")
    env = _env(own_kafka.address, own_redis.address, unique, tmp_path)
    env["CM_CREATE_TOPIC"] = "true"
    consumer_log, agent_log = tmp_path / "consumer.log", tmp_path / "agent.log"
    processes.append(start_consumer(env, consumer_log))
    processes.append(_start_agent(env, "r1", agent_log))
    assert_eventually(_printed(consumer_log, READY), 180, interval=0.5)
    assert_eventually(_printed(agent_log, "replica r1 running at epoch"), 120, interval=0.5)
    for service in (own_redis, own_kafka):
        # Long enough for several retries of each (the agent's every 300 ms or so).
        service.sigkill_and_restart(down_s=6.0)
        assert_eventually(_printed(consumer_log, "supervision: outage over"), 120, interval=0.5)
        consumer_lines = consumer_log.read_text().splitlines()
        # The ready line, then per outage one line when it begins, one when it ends.
        assert len(consumer_lines) <= 3, consumer_log.read_text()
        assert _noise(consumer_log) == [
            line for line in consumer_lines if "supervision: outage" in line
        ], consumer_log.read_text()
        consumer_log.write_text("")
    agent_lines = agent_log.read_text().splitlines()
    # The ready line; per outage a line when it begins and one when it ends, from the
    # producers (one shared log per Kafka cluster) and the membership check (Redis).
    assert len(agent_lines) <= 1 + 2 * 2, agent_log.read_text()
    assert not [line for line in agent_lines if "Traceback" in line or "ERROR" in line]
