"""Redis is the source of truth for the consumer's progress
(docs/concepts/requests-and-ordering.md).

Each test runs ``consume`` as an operator does and holds the final contents to the model:
Redis restored from an older copy (the consumer reads again what it lost), a topic deleted
and created again (its requests are applied, never skipped as replays), and progress of
another Kafka cluster (``consume`` stops with one line until ``progress reset``).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_lib
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.config import InfraConfig
from collection_manager.config.services import Service
from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.processes import stop_pid
from collection_manager.devservices.redis_server import start_redis
from collection_manager.storage.keys import consumer_key
from collection_manager.storage.progress import progress_key
from collection_manager.storage.store import RedisStore
from spark_consumers.positions import RESET_COMMAND
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.workload import create_specs, in_kafka_order, produce_until
from tests.model.model import ModelStore
from tests.support import assert_eventually


@pytest.fixture
def own_redis(tmp_path: Path) -> Iterator[list[Service]]:
    """A redis-server of this test's own (a list: the test replaces it when it restarts it)."""
    config = InfraConfig(state_dir=tmp_path / "own-redis")
    handle = [start_redis(config)]
    yield handle
    stop_pid(handle[0].pid)


def _applied(store: RedisStore, specs: list[CollectionSpec]) -> int:
    return sum(store.stats(spec.name).get("requests", 0) for spec in specs)


def _equals_model(store: RedisStore, specs: list[CollectionSpec], model: ModelStore) -> None:
    for spec in specs:
        assert store.snapshot(spec.name).rows == model.collection(spec.name).snapshot()[0]
        counters = store.stats(spec.name)
        assert counters["requests"] == model.collection(spec.name).counters.requests


def _producers(
    kafka: str, topic: str, specs: list[CollectionSpec], stop: threading.Event
) -> list[threading.Thread]:
    threads = [
        threading.Thread(target=produce_until, args=(kafka, topic, specs, p, stop))
        for p in range(3)
    ]
    for thread in threads:
        thread.start()
    return threads


def _stop(process: subprocess.Popen[bytes], log: Path) -> None:
    process.send_signal(signal.SIGTERM)
    assert process.wait(60) == 0, log.read_text()[-3000:]


@pytest.mark.slow  # about two minutes: make test-slow, not make test
def test_redis_restored_from_an_older_copy_is_read_again(
    kafka: str, topic: str, own_redis: list[Service], unique: str, tmp_path: Path
) -> None:
    url = own_redis[0].address
    store = RedisStore.connect(url)
    specs = create_specs(store, unique)
    log = tmp_path / "consumer.log"
    # Small batches: Spark's checkpoint commits some after the copy, so it is ahead of it.
    env = dict(consumer_env(kafka, url, topic, tmp_path), CM_MAX_OFFSETS_PER_TRIGGER="500")
    consumer = start_consumer(env, log)
    stop = threading.Event()
    threads = _producers(kafka, topic, specs, stop)
    copy = tmp_path / "redis-copy"
    try:
        assert_eventually(lambda: _batches_at_least(url, topic, 2), timeout=180, interval=0.5)
        # The older copy: Redis paused so that its files are whole.
        home = InfraConfig(state_dir=tmp_path / "own-redis").state_dir / "redis"
        os.kill(own_redis[0].pid, signal.SIGSTOP)
        try:
            shutil.copytree(home, copy)
        finally:
            os.kill(own_redis[0].pid, signal.SIGCONT)
        at_copy = _applied(store, specs)
        batches_at_copy = _batches_at_least(url, topic, 0)
        # Spark commits batches after the copy: its checkpoint is then ahead of the copy.
        assert_eventually(
            lambda: _batches_at_least(url, topic, batches_at_copy + 3), timeout=180, interval=0.5
        )
        assert_eventually(
            lambda: _more_than(store, specs, at_copy + 200), timeout=180, interval=0.5
        )
        os.kill(own_redis[0].pid, signal.SIGKILL)
        stop_pid(own_redis[0].pid, grace_s=0)
        shutil.rmtree(home)
        shutil.copytree(copy, home)
        own_redis[0] = start_redis(InfraConfig(state_dir=tmp_path / "own-redis"))
        restored_at = time.monotonic()
        store = RedisStore.connect(url)
        lost = _applied(store, specs)
        assert lost < at_copy + 200  # the restored Redis lost what was applied after the copy
        assert_eventually(
            lambda: _more_than(store, specs, at_copy + 200), timeout=240, interval=0.5
        )
        print(
            f"\nrestored Redis: applying beyond its lost tail again after "
            f"{time.monotonic() - restored_at:.1f} s"
        )
        stop.set()
        for thread in threads:
            thread.join(60)
        model = ModelStore(specs)
        model.apply_all(in_kafka_order(kafka, topic))
        assert_eventually(lambda: _equals_model(store, specs, model), timeout=240, interval=1)
        equal_s = time.monotonic() - restored_at
        print(f"restored Redis: equal to the model {equal_s:.1f} s after the restart")
        text = log.read_text()
        assert "reading again from partition" in text, text[-3000:]
        client = redis_lib.Redis.from_url(url)
        assert int(client.hget(consumer_key(topic), "rewinds") or 0) >= 1
        client.close()
        _stop(consumer, log)
    finally:
        stop.set()
        if consumer.poll() is None:
            kill(consumer)


def _batches_at_least(url: str, topic: str, count: int) -> int:
    client = redis_lib.Redis.from_url(url)
    try:
        found = int(client.hget(consumer_key(topic), "batches") or 0)
    finally:
        client.close()
    assert found >= count
    return found


def _more_than(store: RedisStore, specs: list[CollectionSpec], count: int) -> None:
    assert _applied(store, specs) > count


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_a_recreated_topic_is_applied_never_skipped(
    kafka: str,
    topic: str,
    redis: redis_lib.Redis,
    endpoints: devservices.Endpoints,
    unique: str,
    tmp_path: Path,
) -> None:
    url = endpoints.redis_url
    store = RedisStore.connect(url)
    specs = create_specs(store, unique)
    log = tmp_path / "consumer.log"
    consumer = start_consumer(consumer_env(kafka, url, topic, tmp_path), log)
    admin = AdminClient({"bootstrap.servers": kafka})
    try:
        first = _produce_for(kafka, topic, specs, 3.0)
        model = ModelStore(specs)
        old = in_kafka_order(kafka, topic)
        model.apply_all(old)
        assert_eventually(lambda: _equals_model(store, specs, model), timeout=180, interval=0.5)
        assert first > 0
        admin.delete_topics([topic])[topic].result(30)
        assert_eventually(lambda: _gone(admin, topic), timeout=60, interval=0.5)
        recreated_at = time.monotonic()
        admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[
            topic
        ].result(30)
        _produce_for(kafka, topic, specs, 1.0)  # fewer requests: offsets below the old ones
        new = in_kafka_order(kafka, topic)
        model = ModelStore(specs)
        model.apply_all(old + new)
        assert_eventually(lambda: _equals_model(store, specs, model), timeout=240, interval=1)
        applied_s = time.monotonic() - recreated_at
        print(f"\nre-created topic: applied {applied_s:.1f} s after it was created")
        assert "was deleted and created again" in log.read_text()
        assert int(redis.hget(consumer_key(topic), "topic_recreations") or 0) >= 1
        _stop(consumer, log)
    finally:
        if consumer.poll() is None:
            kill(consumer)


def _gone(admin: AdminClient, topic: str) -> None:
    assert topic not in admin.list_topics(timeout=10).topics


def _produce_for(kafka: str, topic: str, specs: list[CollectionSpec], seconds: float) -> int:
    stop = threading.Event()
    threads = _producers(kafka, topic, specs, stop)
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(60)
    return len(in_kafka_order(kafka, topic))


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_progress_of_another_cluster_stops_consume_until_reset(
    kafka: str,
    topic: str,
    redis: redis_lib.Redis,
    endpoints: devservices.Endpoints,
    unique: str,
    tmp_path: Path,
) -> None:
    url = endpoints.redis_url
    store = RedisStore.connect(url)
    specs = create_specs(store, unique)
    env = consumer_env(kafka, url, topic, tmp_path)
    log = tmp_path / "consumer.log"
    _produce_for(kafka, topic, specs, 1.0)
    requests = in_kafka_order(kafka, topic)
    model = ModelStore(specs)
    model.apply_all(requests)
    consumer = start_consumer(env, log)
    try:
        assert_eventually(lambda: _equals_model(store, specs, model), timeout=180, interval=0.5)
        _stop(consumer, log)
        # As if this Redis's progress and watermarks had been written for another cluster.
        redis.hset(progress_key(topic), "cluster_id", "another-cluster")
        other = tmp_path / "other.log"
        refused = start_consumer(env, other)
        assert refused.wait(180) == 1
        errors = [line for line in other.read_text().splitlines() if line.startswith("error:")]
        assert len(errors) == 1, other.read_text()[-3000:]
        assert "another-cluster" in errors[0] and errors[0].endswith(RESET_COMMAND)
        command = [sys.executable, "-m", "collection_manager.cli.main", "progress", "reset"]

        def reset(*flags: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [*command, *flags], env=env, capture_output=True, text=True, timeout=60
            )

        # Not on a terminal: refused without --yes; --dry-run says what it would do.
        unconfirmed = reset()
        assert unconfirmed.returncode == 2 and "run it again with --yes" in unconfirmed.stderr
        dry = reset("--dry-run")
        assert dry.returncode == 0 and dry.stdout.startswith("would forget the progress")
        done = reset("--yes")
        assert done.returncode == 0, done.stderr
        consumer = start_consumer(env, log)
        model.apply_all(requests)  # on purpose: the topic is applied again from its start
        assert_eventually(lambda: _equals_model(store, specs, model), timeout=180, interval=0.5)
        _stop(consumer, log)
    finally:
        if consumer.poll() is None:
            kill(consumer)
