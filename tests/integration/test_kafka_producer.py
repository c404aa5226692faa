"""The agent's producer against a real broker: enforced options, ordering, purge, failures."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, Message, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.core.shutdown import Cancelled, ShutdownToken, guard
from collection_manager.kafka.partitioning import java_murmur2, java_partition
from collection_manager.kafka.producer import (
    ENFORCED,
    KafkaProducer,
    OptionValue,
    ProducerConfig,
    ProducerError,
    ProducerQueueFullError,
)
from tests.support import assert_eventually

PARTITIONS = 4


def consume_all(kafka: str, topic: str, expected: int) -> list[Message]:
    """Every message of ``topic`` from the beginning, once ``expected`` of them arrived."""
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": f"check-{topic}", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got: list[Message] = []

    def arrived() -> list[Message]:
        got.extend(m for m in consumer.consume(10_000, timeout=0.5) if m.error() is None)
        assert len(got) >= expected
        return got

    try:
        return assert_eventually(arrived, timeout=60)
    finally:
        consumer.close()


def messages_at_broker(kafka: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": kafka, "group.id": f"hwm-{topic}"})
    try:
        offsets = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)
            for p in range(PARTITIONS)
        ]
        return sum(high - low for low, high in offsets)
    finally:
        consumer.close()


@pytest.fixture
def producer(kafka: str, request: pytest.FixtureRequest) -> Iterator[KafkaProducer]:
    """A producer with the test's ``extra`` options (via indirect parametrize or default)."""
    options: dict[str, Any] = getattr(request, "param", {})
    wrapper = KafkaProducer(ProducerConfig(kafka, client_id="test", **options))
    yield wrapper
    wrapper.purge("test over")
    wrapper.close(timeout=10)


def test_enforced_options_win_over_extras() -> None:
    config = ProducerConfig(
        "b:9092",
        linger_ms=7,
        extra={"acks": "0", "enable.idempotence": False, "partitioner": "random", "linger.ms": 9},
    )
    options = config.to_librdkafka()
    assert {name: options[name] for name in ENFORCED} == dict(ENFORCED)
    assert options["linger.ms"] == 9
    assert "sasl.password" not in repr(ProducerConfig("b", extra={"sasl.password": "hush"}))
    assert ProducerConfig("b", extra={"sasl.password": "hush"}).redacted()["sasl.password"] == "***"


def test_creation_is_lazy() -> None:
    made: list[dict[str, Any]] = []
    wrapper = KafkaProducer(ProducerConfig("nowhere:1"), factory=made.append)  # type: ignore[arg-type]
    assert (len(wrapper), wrapper.flush(0), wrapper.poll(), wrapper.purge()) == (0, 0, 0, 0)
    assert made == []


def test_idempotence_cannot_be_switched_off(kafka: str) -> None:
    # librdkafka refuses more than 5 in-flight requests only when idempotence is on.
    extra: dict[str, OptionValue] = {
        "enable.idempotence": "false",
        "max.in.flight.requests.per.connection": 50,
    }
    with pytest.raises(ProducerError, match="idempotence"):
        _ = KafkaProducer(ProducerConfig(kafka, extra=extra)).producer


@pytest.mark.parametrize(
    "producer", [{"extra": {"partitioner": "consistent_random"}}], indirect=True
)
def test_keys_map_to_partitions_like_java(producer: KafkaProducer, topic: str, kafka: str) -> None:
    assert java_murmur2(b"21") == -973932308 & 0xFFFFFFFF  # Kafka's own test vectors
    assert java_murmur2(b"foobar") == -790332482 & 0xFFFFFFFF
    keys = [f"collection-{i}".encode() for i in range(40)]
    for key in keys:
        producer.produce(topic, key, b"x")
    assert producer.flush(30) == 0
    placed = {m.key(): m.partition() for m in consume_all(kafka, topic, len(keys))}
    assert placed == {key: java_partition(key, PARTITIONS) for key in keys}


def test_one_key_lands_in_one_partition_in_order(
    producer: KafkaProducer, topic: str, kafka: str
) -> None:
    for seq in range(2_000):
        producer.produce(topic, b"frontiers" if seq % 2 else b"sizes", str(seq).encode())
    assert producer.flush(30) == 0
    by_key: dict[bytes, list[tuple[int, int]]] = {}
    for message in consume_all(kafka, topic, 2_000):
        key, partition, value = message.key(), message.partition(), message.value()
        assert key is not None and partition is not None and value is not None
        by_key.setdefault(key, []).append((partition, int(value)))
    for key, placed in by_key.items():
        assert {partition for partition, _ in placed} == {java_partition(key, PARTITIONS)}
        values = [value for _, value in placed]
        assert values == sorted(values)
        assert len(values) == 1_000
    assert producer.stats().delivered == 2_000


# Batches bounded by time only, the longest librdkafka allows (15 min), so the messages of
# the test sit in the local queue however slowly a busy machine produces them (with 5 s,
# a loaded run sent 113,000 of the 200,000 before the purge).
LINGERING = {
    "linger_ms": 900_000,
    "batch_size": 100_000_000,
    "queue_max_messages": 500_000,
    "extra": {
        "batch.num.messages": 1_000_000,
        "message.max.bytes": 100_000_000,
        "message.timeout.ms": 1_000_000,  # must exceed linger.ms
    },
}


@pytest.mark.parametrize("producer", [LINGERING], indirect=True)
def test_purge_after_cancel_sends_nothing_queued(
    producer: KafkaProducer, topic: str, kafka: str
) -> None:
    # One delivered message first, so the producer id and metadata are settled.
    producer.produce(topic, b"warm-up", b"0")
    assert producer.flush(30) == 0
    token = ShutdownToken("subscribe")
    with pytest.raises(Cancelled):
        for seq in range(400_000):
            if seq == 200_000:
                token.cancel("subscribe dropped")
                producer.purge("subscribe dropped")
            token.raise_if_cancelled()
            producer.produce(topic, b"k%d" % (seq % 16), b"v")
    assert producer.flush(30) == 0
    stats = producer.stats()
    assert stats.produced == 200_001
    assert stats.failed == 0
    assert stats.delivered + stats.purged == 200_001
    assert stats.purged > 199_000
    assert messages_at_broker(kafka, topic) == stats.delivered
    with pytest.raises(Cancelled):
        producer.produce(topic, b"k", b"after purge")


def test_cancel_from_another_thread_stops_a_large_snapshot(
    producer: KafkaProducer, topic: str, kafka: str
) -> None:
    token = ShutdownToken("subscribe")
    outcome: list[BaseException] = []

    def emit() -> None:
        try:
            for seq in guard(range(10_000_000), token):
                producer.produce(topic, b"sizes", b"%d" % seq)
        except Cancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=emit)
    thread.start()

    def half_way() -> None:
        assert producer.stats().produced >= 50_000

    assert_eventually(half_way, timeout=60, interval=0.01)
    token.cancel("subscribe dropped")
    producer.purge("subscribe dropped")
    thread.join(timeout=60)
    assert not thread.is_alive()
    assert len(outcome) == 1
    assert producer.flush(30) == 0
    stats = producer.stats()
    assert stats.produced < 10_000_000
    assert (stats.pending, stats.failed) == (0, 0)
    assert messages_at_broker(kafka, topic) == stats.delivered


def test_delivery_failures_are_counted_and_reported(kafka: str, unique: str) -> None:
    admin = AdminClient({"bootstrap.servers": kafka})
    name = f"small-{unique}"
    spec = NewTopic(
        name, num_partitions=1, replication_factor=1, config={"max.message.bytes": "2000"}
    )
    admin.create_topics([spec])[name].result(30)
    seen: list[KafkaError | None] = []
    wrapper = KafkaProducer(ProducerConfig(kafka))
    try:
        for _ in range(3):
            wrapper.produce(
                name, b"k", b"x" * 10_000, on_delivery=lambda err, _msg: seen.append(err)
            )
        assert wrapper.flush(30) == 0
        wrapper.produce(name, b"k", b"small")
        assert wrapper.flush(30) == 0
    finally:
        wrapper.close(10)
        admin.delete_topics([name])[name].result(30)
    stats = wrapper.stats()
    assert (stats.failed, stats.delivered, stats.pending) == (3, 1, 0)
    assert stats.failures == {"MSG_SIZE_TOO_LARGE": 3}
    assert [err.name() if err else None for err in seen] == ["MSG_SIZE_TOO_LARGE"] * 3


@pytest.mark.parametrize(
    "producer",
    [{"linger_ms": 5_000, "queue_max_messages": 10, "buffer_full_retries": 3}],
    indirect=True,
)
def test_a_queue_that_stays_full_raises_naming_topic_and_size(
    producer: KafkaProducer, topic: str
) -> None:
    with pytest.raises(ProducerQueueFullError) as raised:
        for seq in range(11):
            producer.produce(topic, b"k", b"%d" % seq)
    assert raised.value.topic == topic
    assert raised.value.queue_size == 10
    assert topic in str(raised.value)
    assert producer.stats().produced == 10
