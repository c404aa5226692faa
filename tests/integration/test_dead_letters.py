"""Dead letters always land, on real Kafka, Redis and Spark: published with their original
bytes, or recorded in Redis when publishing fails; each once; the partition moves on."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.cli.main import main
from collection_manager.config import ConsumerConfig
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import KafkaProducer
from collection_manager.storage.dead_letters import (
    REASON_MAX_BYTES,
    UNPUBLISHED,
    DeadLetterLedger,
    UnpublishedLetter,
)
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from schemas.introspection import introspection_spec
from spark_consumers.dead_letter_producer import dead_letter_producer
from spark_consumers.dead_letters import send_dead_letters
from spark_consumers.decode import DeadLetter, KafkaRecord
from spark_consumers.job import start_consumer
from tests.support import assert_eventually

BIG = 1_500_000  # over CM_MAX_REQUEST_BYTES (1 MiB) and Kafka's default 1 MB limits


# No control requests here: the epoch check reads an empty namespace.
NAMESPACE = "cm:test-dead-letters"


def _create(kafka: str, name: str, max_message_bytes: int) -> None:
    admin = AdminClient({"bootstrap.servers": kafka})
    config = {"max.message.bytes": str(max_message_bytes)}
    admin.create_topics([NewTopic(name, 1, 1, config=config)])[name].result(30)


@pytest.fixture
def topics(kafka: str, unique: str) -> Iterator[dict[str, str]]:
    """A request topic holding 2 MB messages; created dead-letter topics are added here."""
    made = {"requests": f"t-{unique}", "small": f"t-{unique}-dead-small"}
    made["large"] = f"t-{unique}-dead-large"
    _create(kafka, made["requests"], 2_000_000)
    _create(kafka, made["large"], 3_000_000)
    _create(kafka, made["small"], 100_000)
    yield made
    admin = AdminClient({"bootstrap.servers": kafka})
    for future in admin.delete_topics(list(made.values())).values():
        future.result(30)


@pytest.fixture
def spec(redis: redis_lib.Redis, unique: str) -> Iterator[CollectionSpec]:
    store = RedisStore(redis)
    made = dataclasses.replace(introspection_spec("compute_frontiers"), name=f"cf-{unique}")
    store.create_collection(made)
    yield made
    store.drop_collection(made.name)


def _append(spec: CollectionSpec, export_id: str, worker: int = 0) -> Append:
    return Append(spec.name, "r1", 1, (((("r1", export_id, worker, 7)), 1),), produced_at=0)


def _produce(kafka: str, topic: str, messages: list[tuple[bytes, bytes]]) -> list[int]:
    """Produces one message at a time (never batched together); returns their offsets."""
    producer = Producer({"bootstrap.servers": kafka, "message.max.bytes": 3_000_000})
    offsets: list[int] = []
    for key, value in messages:
        producer.produce(
            topic, key=key, value=value, on_delivery=lambda _e, m: offsets.append(m.offset())
        )
        assert producer.flush(30) == 0
    return offsets


def _read_all(kafka: str, topic: str, expected: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": f"{topic}-check", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    seen: list[Any] = []

    def arrived() -> None:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message)
        assert len(seen) >= expected

    try:
        assert_eventually(arrived, timeout=90, interval=0)
        while (message := consumer.poll(2)) is not None:  # nothing more, no duplicate
            seen.append(message)
    finally:
        consumer.close()
    return seen


def _config(topics: dict[str, str], dead: str, tmp_path: Path) -> ConsumerConfig:
    return ConsumerConfig(
        topic=topics["requests"],
        dead_letter_topic=topics[dead],
        checkpoint_dir=str(tmp_path / "checkpoint"),
        trigger_interval_ms=200,
    )


def _applied(query: Any, store: RedisStore, spec: CollectionSpec, export_id: str) -> None:
    if query.exception() is not None:
        raise RuntimeError(f"the query failed: {query.exception()}")
    assert ("r1", export_id, 0, 7) in store.snapshot(spec.name).rows, store.stats(spec.name)


def test_an_oversized_request_is_a_dead_letter_and_its_partition_moves_on(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    spec: CollectionSpec,
    topics: dict[str, str],
    tmp_path: Path,
) -> None:
    big = encode_request(_append(spec, "x" * BIG), max_bytes=4 * BIG)
    after = encode_request(_append(spec, "after"))
    key = spec.name.encode()  # one key: one partition, in this order
    offsets = _produce(kafka, topics["requests"], [(key, big), (key, after)])
    store = RedisStore(redis)
    query = start_consumer(
        spark,
        _config(topics, "large", tmp_path),
        kafka,
        endpoints.redis_url,
        replica_namespace=NAMESPACE,
    )
    try:
        assert_eventually(lambda: _applied(query, store, spec, "after"), timeout=120, interval=0.5)
        (dead,) = _read_all(kafka, topics["large"], expected=1)
        assert query.isActive
    finally:
        query.stop()
    assert (dead.key(), dead.value()) == (key, big)  # the original bytes, unchanged
    headers = dict(dead.headers())
    assert headers["source.topic"] == topics["requests"].encode()
    assert (headers["source.partition"], headers["source.offset"]) == (b"0", b"%d" % offsets[0])
    assert headers["error"] == b"OversizedRequestError"
    assert b"exceeds the limit of 1048576 bytes" in headers["reason"]
    assert all(len(value) <= REASON_MAX_BYTES for value in headers.values())
    assert DeadLetterLedger(redis).done(topics["requests"], 0) == offsets[0]


def _status(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    endpoints: Any,
    tmp_path: Path,
) -> dict[str, Any]:
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))
    capsys.readouterr()
    assert main(["status", "--format", "json"]) == 0
    return dict(json.loads(capsys.readouterr().out))


def test_a_dead_letter_that_cannot_be_published_is_recorded_and_the_consumer_goes_on(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    spec: CollectionSpec,
    topics: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    key = spec.name.encode()
    big = encode_request(_append(spec, "x" * BIG), max_bytes=4 * BIG)
    messages = [(key, big), (key, encode_request(_append(spec, "after"))), (key, b"garbage")]
    messages.append((key, encode_request(_append(spec, "last"))))
    offsets = _produce(kafka, topics["requests"], messages)
    store = RedisStore(redis)
    ledger = DeadLetterLedger(redis)
    before = ledger.counts()["unpublished"]
    query = start_consumer(
        spark,
        _config(topics, "small", tmp_path),
        kafka,
        endpoints.redis_url,
        replica_namespace=NAMESPACE,
    )
    try:
        assert_eventually(lambda: _applied(query, store, spec, "last"), timeout=120, interval=0.5)
        # The producer still works after the broker refused one: small ones are published.
        (garbage,) = _read_all(kafka, topics["small"], expected=1)
        assert query.isActive
    finally:
        query.stop()
    assert garbage.value() == b"garbage"
    assert ("r1", "after", 0, 7) in store.snapshot(spec.name).rows
    field = f"{topics['requests']}:0:{offsets[0]}"
    recorded = UnpublishedLetter.from_json(redis.hget(UNPUBLISHED, field))  # type: ignore[arg-type]
    assert (recorded.error, recorded.publish_error) == (
        "OversizedRequestError",
        "MSG_SIZE_TOO_LARGE",
    )
    assert ledger.counts()["unpublished"] == before + 1
    assert ledger.done(topics["requests"], 0) == offsets[2]
    found = _status(capsys, monkeypatch, endpoints, tmp_path)["unpublished_dead_letters"]
    assert found["count"] >= 1
    assert found["newest"][0] == {
        "topic": topics["requests"],
        "partition": 0,
        "offset": offsets[0],
        "error": "OversizedRequestError",
        "publish_error": "MSG_SIZE_TOO_LARGE",
        "reason": recorded.reason,
    }
    redis.hdel(UNPUBLISHED, field)


def _letters(topic: str, offsets: range) -> list[DeadLetter]:
    records = [KafkaRecord(topic, 0, o, b"k", b"bad-%d" % o) for o in offsets]
    return [DeadLetter(r, "SerializationError", "bad") for r in records]


def test_a_replay_publishes_and_counts_each_dead_letter_once(
    kafka: str, redis: redis_lib.Redis, topics: dict[str, str]
) -> None:
    producer: KafkaProducer = dead_letter_producer(
        kafka, 3_100_000, "test-dead-letters", security={}
    )
    ledger = DeadLetterLedger(redis)
    before = ledger.counts()["published"]
    source, dead = topics["requests"], topics["large"]
    assert send_dead_letters(producer, ledger, dead, _letters(source, range(3))) == 3
    assert send_dead_letters(producer, ledger, dead, _letters(source, range(3))) == 0  # replay
    assert send_dead_letters(producer, ledger, dead, _letters(source, range(2, 5))) == 2
    producer.close()
    values = sorted(m.value() for m in _read_all(kafka, dead, expected=5))
    assert values == [b"bad-%d" % o for o in range(5)]
    assert ledger.counts()["published"] == before + 5
    assert ledger.done(source, 0) == 4
    # Recorded as done: nothing more is written for these offsets.
    assert not ledger.record(source, 0, 4, published=1)
    assert ledger.counts()["published"] == before + 5
