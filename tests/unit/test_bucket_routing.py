"""Writers route by bucket: the public helper (``producers/routing.py``) and the agent's
subscribes send what a bucketed collection's consumer accepts, keyed by each request's
unit; an unbucketed collection's requests are sent as before."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest

from collection_manager.core.buckets import bucket_of
from collection_manager.core.errors import SchemaError
from collection_manager.core.filters import eq, ge
from collection_manager.core.requests import (
    Append,
    Delete,
    Fence,
    Heartbeat,
    ReplicaRemoved,
    validate_request,
)
from collection_manager.core.shutdown import ShutdownToken
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import ProducerConfig
from producers.batching import PublishedState
from producers.routing import Message, key_for, messages_for, requests_for
from producers.simulated import Update
from producers.subscribe import Publishing, Subscribe
from schemas.codec import encode_request
from spark_consumers.decode import KafkaRecord, decode_record
from tests.unit.test_agent_batching import Broker

ROW_SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker", "type": "long"},
        {"name": "size", "type": "long"},
    ],
}
PLAIN = CollectionSpec("sizes", ROW_SCHEMA, ("replica_id",))
BUCKETED = dataclasses.replace(PLAIN, buckets=4)
BY_WORKER = dataclasses.replace(PLAIN, buckets=4, bucket_column="worker")
REPLICAS = [f"r{i}" for i in range(12)]


def _append(rows: Sequence[tuple[str, int, int]], collection: str = "sizes") -> Append:
    return Append(collection, "r1", 1, [(row, 1) for row in rows], produced_at=0)


def _accepted(spec: CollectionSpec, messages: Sequence[Message]) -> list[object]:
    """What the consumer makes of the messages: each decoded and checked with its key."""
    records = [KafkaRecord("t", 0, i, m.key, m.value) for i, m in enumerate(messages)]
    return [decode_record(record, {spec.name: spec}, 1 << 20) for record in records]


def test_an_unbucketed_collections_requests_go_as_before() -> None:
    append = _append([("r1", 0, 5)])
    assert requests_for(append, PLAIN) == [append]
    # Same key and same bytes as a producer of 0.1.0 sent, its partition the key's pick.
    assert messages_for(append, PLAIN) == [Message(b"sizes", encode_request(append), None)]
    delete = Delete("sizes", eq("replica_id", "r1"), "gone", Fence("r1", 1))
    assert messages_for(delete, PLAIN) == [Message(b"sizes", encode_request(delete), None)]


def test_an_append_spanning_buckets_becomes_one_grouped_part_per_bucket() -> None:
    rows = [(replica, 0, 1) for replica in REPLICAS]
    parts = requests_for(_append(rows), BUCKETED)
    buckets = sorted({bucket_of(replica, 4) for replica in REPLICAS})
    assert [p.bucket.bucket for p in parts if isinstance(p, Append) and p.bucket] == buckets
    groups = {(p.bucket.group, p.bucket.parts) for p in parts if isinstance(p, Append) and p.bucket}
    assert len(groups) == 1 and next(iter(groups))[1] == len(buckets)
    assert next(iter(groups))[0] is not None
    # Every row went to exactly one part: the one of its bucket.
    assert Counter(u for p in parts if isinstance(p, Append) for u in p.updates) == Counter(
        (row, 1) for row in rows
    )
    for part in parts:
        validate_request(part, {"sizes": BUCKETED})
        assert isinstance(part, Append) and part.bucket is not None
        assert key_for(part) == f"sizes#{part.bucket.bucket}".encode()
    assert _accepted(BUCKETED, messages_for(_append(rows), BUCKETED))


def test_an_append_within_one_bucket_is_one_part_without_a_group() -> None:
    parts = requests_for(_append([("r3", w, 1) for w in range(5)]), BUCKETED)
    assert len(parts) == 1
    part = parts[0]
    assert isinstance(part, Append) and part.bucket is not None
    assert (part.bucket.bucket, part.bucket.group, part.bucket.parts) == (
        bucket_of("r3", 4),
        None,
        1,
    )
    assert key_for(part) == f"sizes#{bucket_of('r3', 4)}".encode()


def test_a_replicas_fenced_delete_reaches_the_one_bucket_of_its_rows() -> None:
    delete = Delete("sizes", eq("replica_id", "r7"), "removed", Fence("r7", 2))
    (part,) = requests_for(delete, BUCKETED)
    assert isinstance(part, Delete) and part.bucket is not None
    assert part.bucket.bucket == bucket_of("r7", 4) and part.fence == Fence("r7", 2)
    assert key_for(part) == f"sizes#{bucket_of('r7', 4)}".encode()
    assert _accepted(BUCKETED, messages_for(delete, BUCKETED)) == [part]


def test_a_delete_pinning_no_bucket_goes_to_every_bucket_as_one_group() -> None:
    for delete in (
        Delete("sizes", ge("size", 3), "big ones"),
        Delete("sizes", eq("replica_id", "r7"), "removed", Fence("r7", 2)),
    ):
        parts = requests_for(delete, BY_WORKER if delete.fence else BUCKETED)
        assert [p.bucket.bucket for p in parts if isinstance(p, Delete) and p.bucket] == [
            0,
            1,
            2,
            3,
        ]
        assert len({p.bucket.group for p in parts if isinstance(p, Delete) and p.bucket}) == 1
        assert [key_for(p) for p in parts] == [f"sizes#{b}".encode() for b in range(4)]


def test_control_requests_are_keyed_by_their_replica() -> None:
    beat = Heartbeat("r1", 3, 10)
    assert requests_for(beat) == [beat]
    assert key_for(beat) == b"r1"
    removed = ReplicaRemoved("r2", 4)
    assert messages_for(removed) == [Message(b"r2", encode_request(removed), None)]


def test_an_append_or_delete_needs_its_own_collections_spec() -> None:
    with pytest.raises(ValueError, match="routed by that collection's spec"):
        requests_for(_append([("r1", 0, 1)]))
    other = CollectionSpec("other", {**ROW_SCHEMA, "name": "other"}, ())
    with pytest.raises(ValueError, match="not by the spec of 'other'"):
        requests_for(Delete("sizes", eq("replica_id", "r1")), other)


def test_a_row_without_a_bucket_value_is_refused_by_the_writer() -> None:
    # A null where the bucket column is: the spec would refuse the row anyway; the router
    # says what it needs rather than sending it to some bucket.
    append = Append("sizes", "r1", 1, [((None, 0, 1), 1)], produced_at=0)
    with pytest.raises(SchemaError, match="a bucket column holds strings or longs"):
        requests_for(append, BUCKETED)


class _Rows:
    """A source whose snapshot is rows of several replicas' ids in column 1 (after the
    agent's own ``replica_id``): bucketed by ``worker``, they spread over the buckets."""

    def snapshot(self) -> Mapping[str, Sequence[Update]]:
        return {"sizes": [((worker, 1), 1) for worker in range(20)]}

    def step(self) -> Mapping[str, Sequence[Update]]:
        return {"sizes": []}


def _subscribe(broker: Broker, spec: CollectionSpec | None, published: PublishedState) -> None:
    publishing = Publishing("r1", 1, "topic", 8, 10, 0, lambda: 0)
    subscribe = Subscribe(
        "sizes", _Rows(), "sizes", publishing, broker.producer(ProducerConfig("fake")),
        ShutdownToken("sub"), published, lambda _reason: None, spec=spec,
    )  # fmt: skip
    subscribe.start()
    subscribe.join(10)


def test_a_subscribe_keys_each_part_by_its_bucket_and_records_them_all() -> None:
    broker, published = Broker(), PublishedState()
    _subscribe(broker, BY_WORKER, published)
    messages = [Message(m.key(), m.value(), None) for m in broker.delivered]
    accepted = _accepted(BY_WORKER, messages)
    assert {m.asked_partition() for m in broker.delivered} == {-1}  # no assignment: the key's
    # 20 rows in batches of 8, each batch split by the bucket of its workers.
    assert {m.key() for m in broker.delivered} == {f"sizes#{b}".encode() for b in range(4)}
    assert all(isinstance(a, Append) and a.bucket is not None for a in accepted)
    expected = Counter({("r1", worker, 1): 1 for worker in range(20)})
    assert published.state() == {"sizes": expected}


def test_a_subscribe_without_a_spec_keys_by_the_collection_as_before() -> None:
    broker, published = Broker(), PublishedState()
    _subscribe(broker, None, published)
    assert {m.key() for m in broker.delivered} == {b"sizes"}
    assert _accepted(PLAIN, [Message(m.key(), m.value(), None) for m in broker.delivered])
    assert {m.asked_partition() for m in broker.delivered} == {-1}
