"""Two consumer applications on one topic and one Redis: both run on, nothing twice.

Each has its own checkpoint, so both read every request; the per-partition watermarks in
Redis decide who applies what. When one got ahead of the other between planning and
applying, the other leaves out what was applied (``WatermarkMovedError`` in the store)
instead of failing its batch.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.workload import (
    applying,
    assert_caught_up_with_the_model,
    produce_until,
)
from tests.support import assert_eventually


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_two_consumers_of_one_topic_both_run_and_apply_nothing_twice(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    topic: str,
    tmp_path: Path,
    workload_specs: list[CollectionSpec],
) -> None:
    store, stop, specs = RedisStore(redis), threading.Event(), workload_specs
    producers = [
        threading.Thread(target=produce_until, args=(kafka, topic, specs, p, stop))
        for p in range(3)
    ]
    consumers, logs = [], []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            logs.append(tmp_path / name / "consumer.log")
            env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path / name)
            consumers.append(start_consumer(env, logs[-1]))
        for thread in producers:
            thread.start()
        running = applying(store, specs, more_than=500)
        for _ in range(3):
            assert_eventually(running, timeout=180)
        stop.set()
        for thread in producers:
            thread.join(60)
        first, second = consumers
        assert_caught_up_with_the_model(kafka, topic, specs, store, first, logs[0].read_text)
        assert second.poll() is None, logs[1].read_text()[-3000:]
    finally:
        stop.set()
        for consumer in consumers:
            if consumer.poll() is None:
                kill(consumer)
