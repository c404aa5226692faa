"""``CM_LOG_FORMAT=json``: every line a long-running process writes to standard error is one
JSON object with its time, level, logger and message, the Spark JVM's (at INFO, so that
there are many) and the Python workers' included; the ready lines stay on stdout as text.
One consumer and one agent, at ``-v``, until a request is applied; about a minute."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_lib

from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices import Endpoints
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import applies_one_row, consumer_env, kill
from tests.integration.test_consume_process import spec  # noqa: F401 (a fixture)

pytestmark = pytest.mark.integration

CLI = [sys.executable, "-m", "collection_manager.cli.main"]
FIELDS = {"time", "level", "logger", "message", "pid"}


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    processes: list[subprocess.Popen[bytes]] = []
    yield processes
    for process in processes:
        if process.poll() is None:
            kill(process)


def _start(argv: list[str], env: dict[str, str], out: Path, err: Path) -> subprocess.Popen[bytes]:
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        return subprocess.Popen(
            [*CLI, *argv, "-v"], env=env, stdout=stdout, stderr=stderr, start_new_session=True
        )


def test_every_stderr_line_of_the_consumer_and_an_agent_is_one_json_object(
    kafka: str,
    endpoints: Endpoints,
    redis: redis_lib.Redis,
    spec: CollectionSpec,  # noqa: F811 (the fixture imported above)
    unique: str,
    tmp_path: Path,
    started: list[subprocess.Popen[bytes]],
) -> None:
    topic = f"t-{unique}"
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path) | {
        "CM_LOG_FORMAT": "json",
        "CM_SPARK_LOG_LEVEL": "INFO",
        "CM_REPLICA_NAMESPACE": f"cm:replicas:{unique}",
        "CM_CREATE_TOPIC": "true",
        # The agent's rows go to collections that do not exist: dead letters, no one's data.
        "CM_COLLECTION_SUFFIX": f"-{unique}",
    }
    store = RedisStore(redis)
    consumer_out, consumer_err = tmp_path / "consumer.out", tmp_path / "consumer.err"
    consumer = _start(["consumer", "run"], env, consumer_out, consumer_err)
    started.append(consumer)
    agent_err = tmp_path / "agent.err"
    started.append(
        _start(["replicas", "run", "--id", "r1"], env, tmp_path / "agent.out", agent_err)
    )
    applies_one_row(consumer, consumer_err, kafka, topic, store, spec.name)
    consumer.send_signal(signal.SIGTERM)
    assert consumer.wait(60) == 0
    assert consumer_out.read_text().startswith("consumer running:")
    lines = _json_lines(consumer_err)
    loggers = {line["logger"] for line in lines}
    assert any(logger.startswith("org.apache.spark") for logger in loggers), loggers
    assert any(logger.startswith(("spark_consumers", "collection_manager")) for logger in loggers)
    assert _json_lines(agent_err), "the agent at -v logs"


def _json_lines(path: Path) -> list[dict[str, object]]:
    """Every line of ``path`` as the JSON object it must be."""
    parsed = []
    for number, line in enumerate(path.read_text().splitlines(), 1):
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            raise AssertionError(f"{path.name}:{number} is no JSON: {line[:300]}") from None
        assert isinstance(record, dict) and record.keys() >= FIELDS, (number, line[:300])
        parsed.append(record)
    return parsed
