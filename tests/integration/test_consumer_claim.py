"""One consumer per topic and Redis: a second refuses to start, unless the first is gone.

The claim is the consumer's alive key (``collection_manager/storage/claims.py``); these
start ``consumer run`` processes on the session's Kafka and Redis.
"""

from __future__ import annotations

import dataclasses
import json
import signal
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.heartbeats import CONSUMER, alive_key
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_spec
from tests.integration.consumer_process import applies_one_row, consumer_env, kill, start_consumer
from tests.support import assert_eventually

# In make test-slow, not make test: two consumers of their own each, about 30 s each; in
# make test, the second session (test_second_session.py) meets a second consumer refused.
pytestmark = pytest.mark.slow


@pytest.fixture
def spec(redis: redis_lib.Redis, unique: str) -> Iterator[CollectionSpec]:
    made = dataclasses.replace(introspection_spec("error_counts"), name=f"ec-{unique}")
    store = RedisStore(redis)
    store.create_collection(made)
    yield made
    store.drop_collection(made.name)


def holder_pid(redis: redis_lib.Redis, topic: str) -> int | None:
    """The pid of the claim's holder, if the claim is held."""
    raw = redis.get(alive_key(CONSUMER, topic))
    return None if raw is None else int(json.loads(raw)["pid"])


def test_of_two_consumers_started_together_one_runs_the_other_refuses_naming_it(
    kafka: str, endpoints: Any, redis: redis_lib.Redis, topic: str, tmp_path: Path
) -> None:
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    logs = [tmp_path / "a.log", tmp_path / "b.log"]
    consumers = [start_consumer(env, log) for log in logs]
    try:

        def one_ended() -> int:
            ended = [i for i, c in enumerate(consumers) if c.poll() is not None]
            assert ended
            return ended[0]

        refused = assert_eventually(one_ended, timeout=60)
        runs = consumers[1 - refused]
        assert consumers[refused].returncode != 0
        lines = logs[refused].read_text().splitlines()
        assert len(lines) == 1, lines
        assert lines[0].startswith(
            f"error: a consumer of topic {topic} already runs on this Redis "
            f"(host {socket.gethostname()}, pid {runs.pid}, since "
        ), lines
        assert lines[0].endswith("wait until its record expires (15 s after its last beat)")

        def running() -> None:
            assert runs.poll() is None, logs[1 - refused].read_text()[-3000:]
            assert "consumer running:" in logs[1 - refused].read_text()

        assert_eventually(running, timeout=120)
        assert holder_pid(redis, topic) == runs.pid
        runs.send_signal(signal.SIGTERM)
        assert runs.wait(60) == 0, logs[1 - refused].read_text()[-3000:]
        assert holder_pid(redis, topic) is None  # a clean stop gives the claim up
    finally:
        for consumer in consumers:
            if consumer.poll() is None:
                kill(consumer)
    for log in logs:
        assert "Traceback" not in log.read_text()


def test_a_consumer_started_after_one_was_killed_takes_over_at_once_and_applies(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    topic: str,
    spec: CollectionSpec,
    tmp_path: Path,
) -> None:
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    first = start_consumer(env, tmp_path / "first.log")
    second = None
    try:

        def claimed() -> None:
            assert holder_pid(redis, topic) == first.pid

        assert_eventually(claimed, timeout=60)
        kill(first)  # SIGKILL: its claim stays until it expires, 15 s later
        assert holder_pid(redis, topic) == first.pid
        log = tmp_path / "second.log"
        second = start_consumer(env, log)
        applies_one_row(second, log, kafka, topic, RedisStore(redis), spec.name)
        assert holder_pid(redis, topic) == second.pid
        text = log.read_text()
        assert f"took over the claim on topic {topic} of a consumer that no longer runs" in text
        assert f"pid {first.pid}" in text
        second.send_signal(signal.SIGTERM)
        assert second.wait(60) == 0, log.read_text()[-3000:]
    finally:
        for consumer in (first, second):
            if consumer is not None and consumer.poll() is None:
                kill(consumer)
    assert "Traceback" not in log.read_text()
