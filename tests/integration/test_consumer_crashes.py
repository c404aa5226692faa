"""The consumer killed at random points: nothing lost, nothing applied twice.

Three producers interleave appends and deletes over three collections on a 4-partition
topic while the consumer process group is SIGKILLed (JVM and Python workers with it) five
times and restarted from its checkpoint. The final Redis state must equal the model fed
with the requests in the order Kafka holds them.
"""

from __future__ import annotations

import random
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.keys import consumer_key
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.workload import (
    applying,
    assert_caught_up_with_the_model,
    produce_until,
)
from tests.support import assert_eventually

KILLS = 5


@pytest.mark.slow  # two to three minutes of SIGKILLs and restarts: make test-slow
def test_sigkilled_consumer_loses_nothing_and_applies_nothing_twice(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    topic: str,
    tmp_path: Path,
    workload_specs: list[CollectionSpec],
) -> None:
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    store, stop, rng = RedisStore(redis), threading.Event(), random.Random(7)
    specs = workload_specs
    producers = [
        threading.Thread(target=produce_until, args=(kafka, topic, specs, p, stop))
        for p in range(3)
    ]
    for thread in producers:
        thread.start()
    running = applying(store, specs)

    consumer = start_consumer(env, tmp_path / "consumer.log")
    try:
        for _ in range(KILLS):
            # Kill once it is applying: some batches done, more in flight.
            assert_eventually(running, timeout=120)
            threading.Event().wait(rng.uniform(0.5, 4.0))
            kill(consumer)
            consumer = start_consumer(env, tmp_path / "consumer.log")
        stop.set()
        for thread in producers:
            thread.join(60)
        log = tmp_path / "consumer.log"
        assert_caught_up_with_the_model(kafka, topic, specs, store, consumer, log.read_text)
    finally:
        stop.set()
        if consumer.poll() is None:
            kill(consumer)


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_sigterm_stops_cleanly_and_progress_is_recorded(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    topic: str,
    tmp_path: Path,
    workload_specs: list[CollectionSpec],
) -> None:
    env = consumer_env(kafka, endpoints.redis_url, topic, tmp_path)
    stop, specs = threading.Event(), workload_specs
    producer = threading.Thread(target=produce_until, args=(kafka, topic, specs, 0, stop))
    producer.start()
    consumer = start_consumer(env, tmp_path / "consumer.log")
    try:

        def progressing() -> None:
            if consumer.poll() is not None:
                raise RuntimeError((tmp_path / "consumer.log").read_text()[-3000:])
            progress = redis.hget(consumer_key(topic), "progress")
            assert progress is not None and f"{topic}:0" in progress.decode()

        # The first batch holds all the producer sent while Spark started: beside the
        # replicated compose test's twelve containers (make test-slow's other worker) the
        # consumer took 40 s to start and its first batch over 80 s more.
        assert_eventually(progressing, timeout=300, interval=0.5)
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, (tmp_path / "consumer.log").read_text()[-3000:]
    finally:
        stop.set()
        producer.join(60)
        if consumer.poll() is None:
            kill(consumer)
