"""Row TTL end to end, on real Kafka, Redis and Spark (a ``consume`` process)
(docs/concepts/ttl-and-expiration.md).

Rows appended with a 3 s TTL go once their TTL passed, retracted by the consumer's timer;
rows refreshed meanwhile (appends of diff 0 with the TTL) stay; a consumer SIGKILLed
before the expiry and started again after it retracts each row exactly once.
"""

from __future__ import annotations

import signal
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from collection_manager import devservices
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.support import assert_eventually

TTL_MS = 3_000
SCHEMA = {
    "type": "record",
    "name": "errors",
    "fields": [{"name": "replica_id", "type": "string"}, {"name": "item", "type": "long"}],
}


@pytest.fixture
def redis_url(endpoints: devservices.Endpoints) -> str:
    """The session's Redis: other tests' consumers beside this one time only their own
    topics' collections (``test_retraction_timer.py``), so nothing else expires these rows."""
    return endpoints.redis_url


@pytest.fixture
def spec(redis_url: str, unique: str) -> Iterator[CollectionSpec]:
    made = CollectionSpec(f"ttl-{unique}", SCHEMA, ("replica_id",))
    store = RedisStore.connect(redis_url)
    store.create_collection(made)
    yield made
    store.drop_collection(made.name)


def _rows(items: range) -> list[Row]:
    return [("r1", item) for item in items]


def _publish(kafka: str, topic: str, spec: CollectionSpec, rows: list[Row], diff: int) -> None:
    out = KafkaProducer(ProducerConfig(kafka, client_id="ttl-test"))
    append = Append(spec.name, "r1", 1, tuple((row, diff) for row in rows), 0, ttl_ms=TTL_MS)
    out.produce(topic, spec.name.encode(), encode_request(append))
    assert out.close(30) == 0


def _holds(store: RedisStore, spec: CollectionSpec, rows: list[Row]) -> Callable[[], None]:
    def check() -> None:
        assert store.snapshot(spec.name).rows == dict.fromkeys(rows, 1)

    return check


def _retractions(store: RedisStore, spec: CollectionSpec) -> Counter[Row]:
    return Counter(e.row for e in store.reader.tail(spec.name) if e.diff < 0)


def test_rows_expire_after_their_ttl_unless_refreshed(
    kafka: str, topic: str, redis_url: str, spec: CollectionSpec, tmp_path: Path
) -> None:
    store = RedisStore.connect(redis_url)
    log = tmp_path / "consumer.log"
    consumer = start_consumer(consumer_env(kafka, redis_url, topic, tmp_path), log)
    kept, dropped = _rows(range(5)), _rows(range(5, 10))
    try:
        _publish(kafka, topic, spec, kept + dropped, 1)
        assert_eventually(_holds(store, spec, kept + dropped), timeout=120)
        expiries = store.reader.expiries(spec.name)
        # Refreshed every 0.3 s: the kept rows' TTL starts again long before it ends.
        while any(row in store.snapshot(spec.name).rows for row in dropped):
            assert time.time() * 1000 < max(expiries.values()) + 30_000, log.read_text()[-3000:]
            _publish(kafka, topic, spec, kept, 0)
            time.sleep(0.3)
        gone_ms = time.time() * 1000
        assert store.snapshot(spec.name).rows == dict.fromkeys(kept, 1)
        # Retracted after the expiry, not before; how late shows in the test's output.
        print(f"retracted {gone_ms - max(expiries[row] for row in dropped):.0f} ms after expiry")
        assert all(expiries[row] <= gone_ms for row in dropped)
        # Once no refresh comes, the kept rows go too; each row was retracted once.
        assert_eventually(_holds(store, spec, []), timeout=60)
        assert _retractions(store, spec) == Counter(kept + dropped)
        assert store.stats(spec.name)["expirations"] == 10
        assert store.reader.expiries(spec.name) == {}
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if consumer.poll() is None:
            kill(consumer)


def test_a_consumer_down_at_the_expiry_retracts_each_row_once_after_restart(
    kafka: str, topic: str, redis_url: str, spec: CollectionSpec, tmp_path: Path
) -> None:
    store = RedisStore.connect(redis_url)
    env = consumer_env(kafka, redis_url, topic, tmp_path)
    log = tmp_path / "consumer.log"
    rows = _rows(range(20))
    consumer = start_consumer(env, log)
    try:
        _publish(kafka, topic, spec, rows, 1)
        assert_eventually(_holds(store, spec, rows), timeout=120)
        kill(consumer)
        time.sleep(
            max(0.0, max(store.reader.expiries(spec.name).values()) / 1000 - time.time()) + 1
        )
        # Nothing retracts while no consumer runs.
        assert store.snapshot(spec.name).rows == dict.fromkeys(rows, 1)
        consumer = start_consumer(env, log)
        assert_eventually(_holds(store, spec, []), timeout=120)
        assert _retractions(store, spec) == Counter(rows)
        assert store.stats(spec.name)["expirations"] == 20
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if consumer.poll() is None:
            kill(consumer)
