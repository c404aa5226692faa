"""Random request traffic for consumer tests, and the requests of a topic in Kafka order."""

from __future__ import annotations

import dataclasses
import random
import subprocess
import threading
from collections.abc import Callable, Collection

from confluent_kafka import Consumer, TopicPartition

from collection_manager.core.filters import eq, lt
from collection_manager.core.requests import Append, Delete, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from schemas.codec import decode_request, encode_request
from schemas.introspection import introspection_spec
from tests.model.model import ModelStore
from tests.support import assert_eventually

NAMES = ("compute_frontiers", "error_counts", "replica_metrics")


def create_specs(store: RedisStore, unique: str) -> list[CollectionSpec]:
    """Three introspection collections of this test's own, created in ``store``."""
    made = [dataclasses.replace(introspection_spec(n), name=f"{n}-{unique}") for n in NAMES]
    for spec in made:
        store.create_collection(spec)
    return made


def random_request(spec: CollectionSpec, rng: random.Random, producer: int) -> Request:
    """An append of a few rows of replica ``r<producer>``, or now and then a delete."""
    replica = f"r{producer}"
    if rng.random() < 0.1:
        where = eq("replica_id", replica) if rng.random() < 0.5 else lt(spec.column_names[-1], 5)
        return Delete(spec.name, where, "test")
    kinds = {
        "string": lambda: f"s{rng.randrange(4)}",
        "long": lambda: rng.randrange(10),
        "double": lambda: rng.randrange(10) / 4,
    }
    updates = tuple(
        ((replica, *(kinds[c.type]() for c in spec.columns[1:])), rng.choice((1, 1, 2, -1)))
        for _ in range(rng.randrange(1, 20))
    )
    return Append(spec.name, replica, 1, updates, produced_at=0)


def produce_until(
    kafka: str,
    topic: str,
    specs: list[CollectionSpec],
    producer: int,
    stop: threading.Event,
    pause_s: float = 0.01,
) -> None:
    """Publishes random requests to ``specs`` until ``stop`` is set, then flushes.

    ``pause_s`` between two requests sets the rate. The default, about 100 requests a
    second per producer, keeps a batch in progress at any moment; it used to be five times
    that, as many as a consumer alone on two cores barely keeps up with, which made a
    consumer sharing them with another test (two xdist workers) fall behind for minutes.
    """
    rng = random.Random(producer)
    out = KafkaProducer(ProducerConfig(kafka, client_id=f"test-{producer}", linger_ms=20))
    while not stop.wait(pause_s):
        request = random_request(rng.choice(specs), rng, producer)
        out.produce(topic, request.collection.encode(), encode_request(request))  # type: ignore[union-attr]
    assert out.close(30) == 0


def in_kafka_order(kafka: str, topic: str, skip: Collection[bytes] = ()) -> list[Request]:
    """Every request of ``topic``, partition by partition in offset order (but for records
    whose value is in ``skip``: dead letters the test sent on purpose)."""
    return [
        request
        for partition in partitions_in_order(kafka, topic, skip).values()
        for _, request in partition
    ]


def partitions_in_order(
    kafka: str, topic: str, skip: Collection[bytes] = ()
) -> dict[int, list[tuple[int, Request]]]:
    """Per partition of ``topic`` (it has 4), its ``(offset, request)`` in offset order."""
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": f"{topic}-read", "enable.auto.commit": False}
    )
    partitions: dict[int, list[tuple[int, Request]]] = {}
    try:
        for partition in range(4):
            requests = partitions[partition] = []
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), 10)
            consumer.assign([TopicPartition(topic, partition, low)])
            while low < high:
                message = consumer.poll(5)
                assert message is not None and message.error() is None
                if message.value() not in skip:
                    requests.append((message.offset(), decode_request(message.value())))
                low = message.offset() + 1
    finally:
        consumer.close()
    return partitions


def applying(
    store: RedisStore, specs: list[CollectionSpec], more_than: int = 0
) -> Callable[[], None]:
    """A check for ``assert_eventually`` that passes once the collections counted more than
    ``more_than`` requests beyond what they had when it last passed: the consumer applies."""
    applied = [0]

    def check() -> None:
        total = sum(store.stats(spec.name).get("requests", 0) for spec in specs)
        assert total > applied[0] + more_than
        applied[0] = total

    return check


def assert_caught_up_with_the_model(
    kafka: str,
    topic: str,
    specs: list[CollectionSpec],
    store: RedisStore,
    consumer: subprocess.Popen[bytes],
    log: Callable[[], str],
    refreshed: Collection[str] = (),
    skip: Collection[bytes] = (),
) -> None:
    """Once the running consumer applied every request of ``topic``: the contents and the
    request and retraction counters equal the model's (nothing lost, nothing twice).

    The collections in ``refreshed`` still get refreshes (appends with a TTL and zero
    diffs, which change no contents) while this reads: their counters are not compared.
    Records whose value is in ``skip`` are dead letters the test sent on purpose.
    """
    model = ModelStore(specs)
    model.apply_all(in_kafka_order(kafka, topic, skip))

    def caught_up() -> None:
        assert consumer.poll() is None, log()[-3000:]
        for spec in specs:
            stored, expected = store.snapshot(spec.name).rows, model.collection(spec.name)
            # Says whether a mismatch is lag (fewer requests applied) or a wrong state.
            applied = store.stats(spec.name).get("requests", 0)
            assert stored == expected.snapshot()[0], (
                f"{spec.name}: {applied} of {expected.counters.requests} requests applied; "
                f"rows differing: {len(set(stored.items()) ^ set(expected.snapshot()[0].items()))}"
                f"\n{log()[-3000:]}"
            )

    assert_eventually(caught_up, timeout=180, interval=1)
    for spec in (s for s in specs if s.name not in refreshed):
        counters, expected = store.stats(spec.name), model.collection(spec.name).counters
        # A counter that never moved is absent from the stats hash.
        stored = (counters.get("requests", 0), counters.get("retractions", 0))
        assert stored == (expected.requests, expected.retractions), (
            f"{spec.name}: (requests, retractions) stored {stored}, "
            f"model {(expected.requests, expected.retractions)}"
        )
