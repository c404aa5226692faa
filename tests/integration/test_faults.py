"""Faults of the services around the consumer, injected while it applies: it waits them out.

Each test runs the consumer as an operator does (a ``consume`` process) against a Redis
of its own, injects a fault into that Redis while three producers publish, and then holds
the final contents to the model fed with every request in Kafka order: nothing lost,
nothing applied twice, and the consumer never exited.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from collection_manager.config import InfraConfig
from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.processes import stop_pid
from collection_manager.devservices.redis_server import start_redis
from collection_manager.devservices.services import Service
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.workload import (
    assert_caught_up_with_the_model,
    create_specs,
    produce_until,
)
from tests.support import assert_eventually


@dataclasses.dataclass
class OwnRedis:
    """A redis-server only this test uses, so that it may kill and pause it."""

    config: InfraConfig
    service: Service

    @property
    def url(self) -> str:
        return self.service.address

    def sigkill_and_restart(self, down_s: float) -> None:
        os.kill(self.service.pid, signal.SIGKILL)
        stop_pid(self.service.pid, grace_s=0)  # reaps it
        time.sleep(down_s)
        self.service = start_redis(self.config)  # same port and data directory (AOF)

    def pause(self, paused_s: float) -> None:
        os.kill(self.service.pid, signal.SIGSTOP)
        try:
            time.sleep(paused_s)
        finally:
            os.kill(self.service.pid, signal.SIGCONT)


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[OwnRedis]:
    config = InfraConfig(state_dir=tmp_path / "own-redis")
    handle = OwnRedis(config, start_redis(config))
    yield handle
    stop_pid(handle.service.pid)


def _run_through(
    fault: Any, kafka: str, topic: str, own_redis: OwnRedis, unique: str, tmp_path: Path
) -> str:
    """Runs consumer and producers, injects ``fault``, checks the result; returns the log."""
    store = RedisStore.connect(own_redis.url)
    specs: list[CollectionSpec] = create_specs(store, unique)
    log = tmp_path / "consumer.log"
    consumer = start_consumer(consumer_env(kafka, own_redis.url, topic, tmp_path), log)
    stop = threading.Event()
    producers = [
        threading.Thread(target=produce_until, args=(kafka, topic, specs, p, stop))
        for p in range(3)
    ]
    applied = [0]

    def applying() -> None:
        assert consumer.poll() is None, log.read_text()[-3000:]
        total = sum(store.stats(spec.name).get("requests", 0) for spec in specs)
        assert total > applied[0]
        applied[0] = total

    try:
        for thread in producers:
            thread.start()
        assert_eventually(applying, timeout=120, interval=0.5)
        fault()
        assert_eventually(applying, timeout=120, interval=0.5)
        stop.set()
        for thread in producers:
            thread.join(60)
        assert_caught_up_with_the_model(kafka, topic, specs, store, consumer, log.read_text)
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, log.read_text()[-3000:]
    finally:
        stop.set()
        if consumer.poll() is None:
            kill(consumer)
    return log.read_text()


def test_redis_sigkilled_and_restarted_mid_run(
    kafka: str, topic: str, own_redis: OwnRedis, unique: str, tmp_path: Path
) -> None:
    output = _run_through(
        lambda: own_redis.sigkill_and_restart(down_s=3.0), kafka, topic, own_redis, unique, tmp_path
    )
    assert "WARNING spark_consumers.supervision: outage: " in output


def test_redis_paused_longer_than_a_socket_timeout(
    kafka: str, topic: str, own_redis: OwnRedis, unique: str, tmp_path: Path
) -> None:
    _run_through(lambda: own_redis.pause(8.0), kafka, topic, own_redis, unique, tmp_path)
