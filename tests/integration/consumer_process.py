"""A ``collection-manager consumer run`` process for a test: its environment, start and kill."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from collection_manager.core.requests import Append
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from tests.support import assert_eventually


def consumer_env(kafka: str, redis_url: str, topic: str, tmp_path: Path) -> dict[str, str]:
    """The environment of a ``collection-manager consumer run`` process for this test."""
    return dict(
        os.environ,
        CM_KAFKA_BOOTSTRAP=kafka,
        CM_REDIS_URL=redis_url,
        CM_TOPIC=topic,
        CM_DEAD_LETTER_TOPIC=f"{topic}-dead",
        CM_CHECKPOINT_DIR=str(tmp_path / "checkpoint"),
        CM_TRIGGER_INTERVAL_MS="200",
        CM_SPARK_MASTER="local[2]",
    )


# Every consumer a test started, so that none outlives its test (``stop_leftovers``).
_started: list[subprocess.Popen[bytes]] = []


def start_consumer(
    env: dict[str, str], log: Path, cwd: Path | None = None, verbose: bool = False
) -> subprocess.Popen[bytes]:
    """Starts ``consume`` (``-v``: with its INFO lines) in its own process group, its output
    appended to ``log``."""
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [sys.executable, "-m", "collection_manager.cli.main", "consumer", "run"]
            + (["-v"] if verbose else []),
            env=env,
            cwd=cwd,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    _started.append(process)
    return process


def stop_leftovers() -> int:
    """Kills the consumers started so far that still run; returns how many there were."""
    left = [process for process in _started if process.poll() is None]
    for process in left:
        kill(process)
    _started.clear()
    return len(left)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILLs the consumer's process group and reaps it."""
    # The whole group: the Spark JVM and its Python workers die with the driver.
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)


def run_cli(argv: list[str], timeout: float = 120, **env: str) -> subprocess.CompletedProcess[str]:
    """``collection-manager <argv>`` in a child process with ``env`` added; its output."""
    return subprocess.run(
        [sys.executable, "-m", "collection_manager.cli.main", *argv],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def applies_one_row(
    consumer: subprocess.Popen[bytes],
    log: Path,
    kafka: str,
    topic: str,
    store: RedisStore,
    name: str,
) -> None:
    """Produces one append of one row of collection ``name`` to ``topic`` and waits until
    ``consumer`` applied it, running all along."""
    producer = KafkaProducer(ProducerConfig(kafka))
    row = ("r1", "e1", 3)
    append = Append(name, "r1", 1, ((row, 1),), produced_at=0)
    producer.produce(topic, name.encode(), encode_request(append))
    producer.close()

    def applied() -> None:
        assert consumer.poll() is None, log.read_text()[-3000:]
        assert store.snapshot(name).rows == {row: 1}

    assert_eventually(applied, timeout=120, interval=0.1)
