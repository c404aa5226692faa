"""The Spark consumer on real Kafka, Redis and Spark: ordered, exactly-once, dead letters."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.config import ConsumerConfig
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete, Fence, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.epochs import epoch_key
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from schemas.introspection import introspection_specs
from spark_consumers.job import start_consumer
from tests.model.model import ModelStore
from tests.support import assert_eventually

# Also on the project's images in make test's container pass.
pytestmark = pytest.mark.containers


@pytest.fixture
def specs(redis: redis_lib.Redis, unique: str) -> Iterator[list[CollectionSpec]]:
    store = RedisStore(redis)
    made = [dataclasses.replace(s, name=f"{s.name}-{unique}") for s in introspection_specs()[:3]]
    for spec in made:
        store.create_collection(spec)
    yield made
    for spec in made:
        store.drop_collection(spec.name)


@pytest.fixture
def namespace(redis: redis_lib.Redis, unique: str) -> Iterator[str]:
    """The test's controller namespace, where epoch 1 of r1 was issued (its fences are real)."""
    name = f"cm:replicas:{unique}"
    redis.set(epoch_key(name, "r1"), 1)
    yield name
    redis.delete(epoch_key(name, "r1"))


@pytest.fixture
def consumer_config(topic: str, kafka: str, tmp_path: Path) -> ConsumerConfig:
    dead = f"{topic}-dead"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(dead, 1, 1)])[dead].result(30)
    return ConsumerConfig(
        topic=topic,
        dead_letter_topic=dead,
        checkpoint_dir=str(tmp_path / "checkpoint"),
        trigger_interval_ms=200,
    )


def _row(spec: CollectionSpec, replica: str, i: int) -> tuple[Any, ...]:
    values = {"string": f"x{i}", "long": i, "double": i / 2, "boolean": i % 2 == 0}
    return (replica, *(values[c.type] for c in spec.columns[1:]))


def _stream(specs: list[CollectionSpec]) -> list[Request]:
    requests: list[Request] = []
    for i in range(30):
        spec = specs[i % len(specs)]
        replica = f"r{i % 3}"
        updates = ((_row(spec, replica, i), 1), (_row(spec, replica, i + 1), 2))
        requests.append(Append(spec.name, replica, 1, updates, produced_at=0))
        if i % 7 == 6:
            requests.append(Append(spec.name, replica, 1, ((_row(spec, replica, i), -1),), 0))
        if i == 20:
            requests.append(Delete(spec.name, eq("replica_id", "r1"), "removed", Fence("r1", 1)))
    return requests


def _produce(kafka: str, topic: str, messages: list[tuple[bytes, bytes]]) -> None:
    producer = Producer(
        {"bootstrap.servers": kafka, "enable.idempotence": True, "partitioner": "murmur2_random"}
    )
    for key, value in messages:
        producer.produce(topic, key=key, value=value)
    assert producer.flush(30) == 0


def _dead_letters(kafka: str, topic: str, expected: int) -> list[Any]:
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": f"{topic}-check", "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    seen: list[Any] = []

    def arrived() -> None:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append(message)
        assert len(seen) == expected

    try:
        assert_eventually(arrived, timeout=60, interval=0)
    finally:
        consumer.close()
    return seen


def test_consumer_applies_in_order_and_dead_letters_bad_input(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    specs: list[CollectionSpec],
    consumer_config: ConsumerConfig,
    namespace: str,
) -> None:
    requests = _stream(specs)
    messages = [(r.collection.encode(), encode_request(r)) for r in requests]  # type: ignore[union-attr]
    bad = [
        (specs[0].name.encode(), b"garbage"),
        (specs[1].name.encode(), b"\xc3\x01" + b"\x00" * 8 + b"body"),
        (b"nope", encode_request(Append("nope", "r1", 1, ((("r1",), 1),), 0))),
        # A row of the wrong shape for its collection: one value where it has more columns.
        (
            specs[2].name.encode(),
            encode_request(Append(specs[2].name, "r1", 1, ((("r1",), 1),), 0)),
        ),
    ]
    _produce(kafka, consumer_config.topic, messages[:10] + bad + messages[10:])

    model = ModelStore(specs)
    model.apply_all(requests)
    store = RedisStore(redis)
    query = start_consumer(
        spark, consumer_config, kafka, endpoints.redis_url, replica_namespace=namespace
    )
    try:

        def applied() -> None:
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            for spec in specs:
                assert store.snapshot(spec.name).rows == model.collection(spec.name).snapshot()[0]

        assert_eventually(applied, timeout=120, interval=0.5)
        assert (
            store.reader.fences(specs[0].name) == model.collection(specs[0].name).fences.as_dict()
        )
        # Before stopping: "nope" may be alone in its partition, applied by a later task.
        dead = _dead_letters(kafka, consumer_config.dead_letter_topic, expected=4)
    finally:
        query.stop()
    reasons = sorted(dict(m.headers())["error"].decode() for m in dead)
    assert reasons == [
        "SchemaError",
        "SerializationError",
        "UnknownCollectionError",
        "UnknownSchemaError",
    ]
    assert sorted(m.value() for m in dead) == sorted(value for _, value in bad)


def test_appends_in_flight_behind_a_fence_never_appear(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    specs: list[CollectionSpec],
    consumer_config: ConsumerConfig,
    namespace: str,
) -> None:
    spec = specs[0]
    early = [Append(spec.name, "r1", 1, ((_row(spec, "r1", i), 1),), 0) for i in range(50)]
    fence = Delete(spec.name, eq("replica_id", "r1"), "replica removed", Fence("r1", 1))
    # Sent by the removed replica before it learned it was removed: behind the fence.
    late = [Append(spec.name, "r1", 1, ((_row(spec, "r1", 100 + i), 1),), 0) for i in range(50)]
    readded = [Append(spec.name, "r1", 2, ((_row(spec, "r1", 200 + i), 1),), 0) for i in range(5)]
    stream: list[Request] = [*early, fence, *late, *readded]
    _produce(
        kafka, consumer_config.topic, [(spec.name.encode(), encode_request(r)) for r in stream]
    )
    store = RedisStore(redis)
    query = start_consumer(
        spark, consumer_config, kafka, endpoints.redis_url, replica_namespace=namespace
    )
    try:

        def applied() -> None:
            assert store.stats(spec.name).get("requests", 0) == len(stream)

        assert_eventually(applied, timeout=120, interval=0.5)
    finally:
        query.stop()
    rows = store.snapshot(spec.name).rows
    assert rows == {_row(spec, "r1", 200 + i): 1 for i in range(5)}  # only the new epoch
    assert store.stats(spec.name)["fused_appends"] == len(late)


def test_bad_names_ttl_and_epochs_are_dead_letters_that_say_why(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    specs: list[CollectionSpec],
    consumer_config: ConsumerConfig,
    namespace: str,
    unique: str,
) -> None:
    spec = specs[0]
    # A replica id no other test uses, whose epoch counter this test sets itself.
    r = f"w-{unique[-8:]}"
    redis.set(epoch_key(namespace, r), 1)
    good = [Append(spec.name, r, 1, ((_row(spec, r, i), 1),), 0) for i in range(10)]
    one = ((_row(spec, r, 99), 1),)
    bad: list[tuple[str, Request, str]] = [
        ("a*", Append("a*", r, 1, one, 0), "collection name 'a*' has '*' at position 1"),
        (
            f"{spec.name}*",
            Delete(f"{spec.name}*", eq("replica_id", r)),
            f"collection name '{spec.name}*' has '*' at position {len(spec.name)}",
        ),
        (spec.name, Append(spec.name, "r[1]", 1, one, 0), "replica id 'r[1]' has '['"),
        (spec.name, Append(spec.name, r, 1, one, 0, ttl_ms=0), "ttl_ms 0 is outside 1.."),
        (spec.name, Append(spec.name, r, 0, one, 0), f"epoch 0 of replica {r} is below 1"),
        (
            spec.name,
            Delete(spec.name, eq("replica_id", r), "forged", Fence(r, 2**62)),
            f"epoch {2**62} of replica {r} was never issued (highest issued: 1)",
        ),
    ]
    messages = [(spec.name.encode(), encode_request(r)) for r in good]
    for i, (key, request, _) in enumerate(bad):
        messages.insert(2 * i + 1, (key.encode(), encode_request(request)))
    _produce(kafka, consumer_config.topic, messages)
    store = RedisStore(redis)
    query = start_consumer(
        spark, consumer_config, kafka, endpoints.redis_url, replica_namespace=namespace
    )
    expected = {_row(spec, r, i): 1 for i in range(10)}
    try:

        def applied() -> None:
            assert query.exception() is None, query.exception()
            assert store.snapshot(spec.name).rows == expected

        assert_eventually(applied, timeout=120, interval=0.5)
        dead = _dead_letters(kafka, consumer_config.dead_letter_topic, expected=len(bad))
        assert query.isActive
    finally:
        query.stop()
    reasons = [dict(m.headers())["reason"].decode() for m in dead]
    for _, _, reason in bad:
        assert sum(reason in text for text in reasons) == 1, (reason, reasons)
    assert r not in store.reader.fences(spec.name)
    redis.delete(epoch_key(namespace, r))


def test_diffs_past_the_domain_and_overflowing_sums_are_dead_letters(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    specs: list[CollectionSpec],
    consumer_config: ConsumerConfig,
    namespace: str,
    unique: str,
) -> None:
    spec = specs[0]
    r = f"n-{unique[-8:]}"
    redis.set(epoch_key(namespace, r), 1)
    big, other = _row(spec, r, 1), _row(spec, r, 2)
    limit = 2**53 - 1
    requests = [
        Append(spec.name, r, 1, ((big, limit),), 0),
        Append(spec.name, r, 1, ((big, 1), (other, 1)), 0),  # big would reach 2^53: refused
        Append(spec.name, r, 1, ((other, 2**53),), 0),  # a diff outside the domain
        Append(spec.name, r, 1, ((other, 5),), 0),
    ]
    messages = [(spec.name.encode(), encode_request(q)) for q in requests]
    _produce(kafka, consumer_config.topic, messages)
    store = RedisStore(redis)
    query = start_consumer(
        spark, consumer_config, kafka, endpoints.redis_url, replica_namespace=namespace
    )
    try:

        def applied() -> None:
            assert query.exception() is None, query.exception()
            assert store.snapshot(spec.name).rows == {big: limit, other: 5}

        assert_eventually(applied, timeout=120, interval=0.5)
        dead = _dead_letters(kafka, consumer_config.dead_letter_topic, expected=2)
        assert query.isActive
    finally:
        query.stop()
    headers = sorted((dict(m.headers())["error"], dict(m.headers())["reason"]) for m in dead)
    assert headers[0][0] == b"MultiplicityOverflowError"
    assert b"to 9007199254740992, outside the supported integer range" in headers[0][1]
    assert headers[1][0] == b"SchemaError"
    assert b"diff 9007199254740992 is outside the supported integer range" in headers[1][1]
    assert store.writer.take_refused(spec.name) == {}  # published, so forgotten
    redis.delete(epoch_key(namespace, r))
