"""Every bucket its own partition, on the run's real broker and Redis: ``collections
create --buckets N`` reads the topic's partitions from Kafka and records where each bucket
goes; agents (``EmbeddedReplica``), the controller's fenced delete and raw producers through
``producers.routing`` then put each bucket's requests on that partition, read back from
Kafka. 16 buckets on 16 partitions use all 16, 64 use each 4 times; a collection created
before assignments keeps its keys' hash, also when it is created again; a missing topic is
created with a partition per bucket."""

from __future__ import annotations

import dataclasses
import json
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import OFFSET_BEGINNING, Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.cli.main import main
from collection_manager.config import ReplicaConfig
from collection_manager.core.buckets import bucket_of
from collection_manager.core.requests import Append
from collection_manager.kafka.partitioning import java_partition
from collection_manager.storage.store import RedisStore
from producers.embedded import EmbeddedReplica
from producers.routing import PRODUCER_SETTINGS, collection_spec, produce
from producers.sources.plugin import SourceCollection, field

SIZES = SourceCollection("sizes", (field("worker", "long"), field("size", "long")))
PARTITIONS = 16


@pytest.fixture
def wide_topic(kafka: str, unique: str) -> Iterator[str]:
    """A fresh topic of 16 partitions, deleted after the test."""
    admin = AdminClient({"bootstrap.servers": kafka})
    name = f"t16-{unique}"
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])[name].result(30)
    yield name
    admin.delete_topics([name])[name].result(30)


@pytest.fixture
def setting(
    monkeypatch: pytest.MonkeyPatch,
    endpoints: devservices.Endpoints,
    wide_topic: str,
    unique: str,
    tmp_path: Path,
) -> ReplicaConfig:
    """The CLI and the replicas on the session's services, with this test's topic,
    namespace and collection suffix."""
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CM_TOPIC", wide_topic)
    monkeypatch.setenv("CM_REPLICA_NAMESPACE", f"cm:replicas:{unique}")
    monkeypatch.setenv("CM_COLLECTION_SUFFIX", f"-{unique}")
    return ReplicaConfig(
        step_interval_ms=200,
        heartbeat_interval_ms=200,
        replica_namespace=f"cm:replicas:{unique}",
        collection_suffix=f"-{unique}",
    )


@pytest.fixture
def store(redis: redis_lib.Redis, setting: ReplicaConfig) -> Iterator[RedisStore]:
    """The store; this test's collections and replica records are removed after."""
    made = RedisStore(redis)
    yield made
    for name in made.collections():
        if name.endswith(setting.collection_suffix):
            made.drop_collection(name)
    keys = list(redis.scan_iter(match=f"{setting.replica_namespace}:*"))
    if keys:
        redis.delete(*keys)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 0
    return capsys.readouterr().out


def _create(capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, buckets: int) -> str:
    schema = tmp_path / "sizes.avsc"
    schema.write_text(json.dumps(SIZES.spec("").row_schema))
    create = ["collections", "create", name, "--schema", str(schema), "--index", "replica_id"]
    return _cli(capsys, *create, "--buckets", str(buckets))


def _where(kafka: str, topic: str, timeout_s: float = 60) -> dict[str, Counter[int]]:
    """How many of each key's messages on ``topic`` are in each partition: every message
    the topic holds now (all were acknowledged before), read from its start."""
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    found: dict[str, Counter[int]] = defaultdict(Counter)
    try:
        ends = {
            p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in range(PARTITIONS)
        }
        left = {p for p, end in ends.items() if end > 0}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in left])
        deadline = time.monotonic() + timeout_s
        while left and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            found[(message.key() or b"").decode()][message.partition()] += 1
            if message.offset() + 1 >= ends[message.partition()]:
                left.discard(message.partition())
    finally:
        consumer.close()
    assert not left, f"partitions {sorted(left)} not read to their end"
    return dict(found)


def _wait_for_messages(kafka: str, topic: str, wanted: Counter[str], timeout_s: float = 60) -> None:
    """Until ``topic`` holds at least ``wanted[key]`` messages of each key."""
    deadline = time.monotonic() + timeout_s
    while True:
        found = _where(kafka, topic)
        short = {k: n for k, n in wanted.items() if found.get(k, Counter()).total() < n}
        if not short:
            return
        assert time.monotonic() < deadline, f"after {timeout_s} s, too few messages of {short}"
        time.sleep(0.5)


def _rows(buckets: int) -> list[tuple[tuple[Any, ...], int]]:
    """Rows of replicas in every one of ``buckets`` buckets."""
    replicas = {bucket_of(f"r{n}", buckets): f"r{n}" for n in range(2000)}
    assert len(replicas) == buckets
    return [((replica, 0, 1), 1) for replica in replicas.values()]


@pytest.mark.parametrize(("buckets", "per_partition"), [(16, 1), (64, 4)])
def test_buckets_are_spread_over_the_partitions_by_rule(
    buckets: int,
    per_partition: int,
    kafka: str,
    wide_topic: str,
    setting: ReplicaConfig,
    store: RedisStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = f"sizes-{buckets}{setting.collection_suffix}"
    out = _create(capsys, tmp_path, name, buckets)
    spread = "each bucket its own" if per_partition == 1 else "4 buckets a partition"
    assert out.startswith(f"created {name} in {buckets} buckets by replica_id on 16 partitions")
    assert spread in out
    spec = collection_spec(name)
    assert spec.partitioning is not None and spec.partitioning.partitions == PARTITIONS
    # One append of a row in every bucket: a group of one part per bucket.
    producer = Producer({"bootstrap.servers": kafka, **PRODUCER_SETTINGS})
    sent = produce(producer, wide_topic, Append(name, "w", 1, _rows(buckets), 0), spec)
    assert sent == buckets and producer.flush(30) == 0
    where = _where(kafka, wide_topic)
    assert all(len(partitions) == 1 for partitions in where.values())
    used = Counter(next(iter(partitions)) for partitions in where.values())
    assert used == dict.fromkeys(range(PARTITIONS), per_partition)
    shown = json.loads(_cli(capsys, "collections", "show", name, "--format", "json"))
    assert shown["partitioning"]["assigned"] == list(spec.partitioning.assigned)
    status = _cli(capsys, "status", "--format", "table")
    assert ("on fewer partitions than buckets" in status) is (per_partition > 1)


def test_agents_the_controller_and_raw_producers_share_each_buckets_partition(
    kafka: str,
    endpoints: devservices.Endpoints,
    wide_topic: str,
    setting: ReplicaConfig,
    store: RedisStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = SIZES.spec(setting.collection_suffix).name
    _create(capsys, tmp_path, name, 8)
    spec = collection_spec(name)
    replicas = [f"r{n}" for n in range(3)]
    started = []
    try:
        for replica in replicas:
            embedded = EmbeddedReplica(
                replica, [SIZES], kafka, endpoints.redis_url, wide_topic, setting
            )
            embedded.start()
            started.append(embedded)
            embedded.set_rows("sizes", [(0, 1), (1, 2)])
        # Each replica's rows go out at its next step: wait for them on the topic (a fixed
        # sleep found none under load), counting replicas that share a bucket.
        _wait_for_messages(
            kafka, wide_topic, Counter(f"{name}#{bucket_of(r, 8)}" for r in replicas)
        )
    finally:
        for embedded in started:
            embedded.stop("test over")  # removes it: a fenced delete to its bucket
    producer = Producer({"bootstrap.servers": kafka, **PRODUCER_SETTINGS})
    for replica in replicas:
        produce(producer, wide_topic, Append(name, replica, 1, [((replica, 9, 9), 1)], 0), spec)
    assert producer.flush(30) == 0
    # Per replica: its appends, its removal's fenced delete and the raw producer's append,
    # all keyed by its bucket, all on the bucket's partition.
    where = _where(kafka, wide_topic)
    for replica in replicas:
        bucket = bucket_of(replica, 8)
        placed = where[f"{name}#{bucket}"]
        assert set(placed) == {spec.partition_of(bucket)} and placed.total() >= 3


def test_a_collection_created_before_assignments_keeps_its_keys_hash(
    kafka: str,
    wide_topic: str,
    setting: ReplicaConfig,
    store: RedisStore,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    name = f"old{setting.collection_suffix}"
    old = dataclasses.replace(SIZES.spec(""), name=name, buckets=16)  # no assignment
    store.create_collection(old)
    out = _create(capsys, tmp_path, name, 16)  # created again: redefined, not reassigned
    assert "placed by its keys' hash" in out
    spec = collection_spec(name)
    assert spec.partitioning is None
    producer = Producer({"bootstrap.servers": kafka, **PRODUCER_SETTINGS})
    produce(producer, wide_topic, Append(name, "w", 1, _rows(16), 0), spec)
    assert producer.flush(30) == 0
    where = _where(kafka, wide_topic)
    for bucket in range(16):
        key = f"{name}#{bucket}"
        assert set(where[key]) == {java_partition(key.encode(), PARTITIONS)}  # as always


def test_a_missing_topic_is_created_with_a_partition_per_bucket(
    kafka: str,
    setting: ReplicaConfig,
    store: RedisStore,
    unique: str,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    topic = f"missing-{unique}"
    monkeypatch.setenv("CM_TOPIC", topic)
    name = f"fresh{setting.collection_suffix}"
    try:
        out = _create(capsys, tmp_path, name, 8)
        assert out.splitlines()[0] == f"created topic {topic} with 8 partitions"
        spec = collection_spec(name)
        assert spec.partitioning is not None and len(set(spec.partitioning.assigned)) == 8
    finally:
        admin = AdminClient({"bootstrap.servers": kafka})
        admin.delete_topics([topic])[topic].result(30)
