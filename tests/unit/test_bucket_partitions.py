"""Every bucket its own partition, by rule (``core/partitions.py``): the rule against a
model, its record in the catalog, the writers' use of it, the collections that keep their
keys' hash, and how ``collections show`` and ``status`` state a topic of fewer partitions
than buckets. No services: the broker and the store are stand-ins."""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import Any, cast

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.cli.buckets import create_checked
from collection_manager.cli.collections import describe_json, describe_tables
from collection_manager.cli.partitions import KEY_HASH, RequestTopic
from collection_manager.cli.status import collection_info, consumer_summary
from collection_manager.cli.status_views import status_tables
from collection_manager.core.buckets import MAX_BUCKETS, bucket_of
from collection_manager.core.errors import InfrastructureError, SchemaError
from collection_manager.core.filters import eq, ge
from collection_manager.core.partitions import MAX_PARTITIONS, Partitioning, assign
from collection_manager.core.requests import Append, Delete, Fence, Heartbeat
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.partitioning import java_partition
from collection_manager.storage.catalog import catalog_record, spec_of
from collection_manager.storage.consumer_status import ConsumerRecord
from collection_manager.storage.store import RedisStore
from producers.batching import PublishedState
from producers.routing import messages_for, partition_for, produce
from tests.unit.test_agent_batching import Broker
from tests.unit.test_bucket_cli import PLAIN, _Store
from tests.unit.test_bucket_routing import _subscribe


def _assigned(buckets: int, partitions: int, name: str = "sizes") -> CollectionSpec:
    spec = dataclasses.replace(PLAIN, name=name, buckets=buckets)
    return dataclasses.replace(spec, partitioning=assign(name, buckets, partitions, "t"))


# --- the rule ------------------------------------------------------------------------------


@given(
    st.text(min_size=1, max_size=20),
    st.integers(2, MAX_BUCKETS),
    st.integers(1, 200),
)
def test_n_buckets_use_n_partitions_or_spread_evenly_over_fewer(
    name: str, buckets: int, partitions: int
) -> None:
    placed = assign(name, buckets, partitions, "t")
    assert len(placed.assigned) == buckets
    assert all(0 <= p < partitions for p in placed.assigned)
    per_partition = Counter(placed.assigned)
    if partitions >= buckets:
        assert len(per_partition) == buckets  # each bucket a partition of its own
        assert not placed.shared
    else:
        assert set(per_partition) == set(range(partitions))  # every partition used
        assert set(per_partition.values()) <= {buckets // partitions, -(-buckets // partitions)}
        assert placed.shared
    assert assign(name, buckets, partitions, "t") == placed  # the same every time


def test_16_buckets_on_16_partitions_use_16_and_64_use_each_4_times() -> None:
    assert len(set(assign("arrangement_sizes", 16, 16, "t").assigned)) == 16
    assert Counter(assign("arrangement_sizes", 64, 16, "t").assigned) == dict.fromkeys(range(16), 4)


def test_the_keys_hash_piles_buckets_up_where_the_rule_does_not() -> None:
    # Why the rule: Kafka's partitioner (murmur2 of the key) puts the 16 keys of this
    # collection's buckets on fewer than 16 of 16 partitions.
    hashed = {java_partition(f"arrangement_sizes#{b}".encode(), 16) for b in range(16)}
    assert len(hashed) < 16


def test_collections_start_at_different_partitions() -> None:
    starts = {assign(f"c{n}", 4, 16, "t").assigned[0] for n in range(20)}
    assert len(starts) > 4


@pytest.mark.parametrize(
    ("make", "bound"),
    [
        (lambda: assign("c", 4, 0, "t"), "over 1 to 100000 (MAX_PARTITIONS)"),
        (lambda: Partitioning("t", MAX_PARTITIONS + 1, (0, 1)), "(MAX_PARTITIONS)"),
        (lambda: Partitioning("t", 4, (0, 4)), "not one of the 4 of topic t (0 to 3)"),
        (lambda: Partitioning("", 4, (0, 1)), "names its topic"),
        (
            lambda: dataclasses.replace(PLAIN, partitioning=Partitioning("t", 4, (0, 1))),
            "only a bucketed collection has one",
        ),
        (
            lambda: dataclasses.replace(
                PLAIN, buckets=4, partitioning=Partitioning("t", 4, (0, 1))
            ),
            "4 buckets but a partition assignment of 2",
        ),
    ],
)
def test_a_bad_assignment_is_one_line_naming_the_bound(make: Any, bound: str) -> None:
    with pytest.raises(SchemaError) as raised:
        make()
    assert bound in str(raised.value) and "\n" not in str(raised.value)


# --- the catalog ---------------------------------------------------------------------------


def test_the_catalog_records_the_assignment_and_reads_it_back() -> None:
    spec = _assigned(8, 16)
    record = json.loads(catalog_record(spec))
    assert record["partitioning"] == {
        "topic": "t",
        "partitions": 16,
        "assigned": list(spec.partitioning.assigned),  # type: ignore[union-attr]
    }
    assert spec_of("sizes", catalog_record(spec)) == spec
    assert spec_of("sizes", catalog_record(spec)).unit(3).partition_of(3) == spec.partition_of(3)


def test_a_record_without_an_assignment_keeps_its_keys_hash() -> None:
    # As a bucketed collection created before assignments is recorded: no "partitioning".
    old = json.dumps(
        {
            "row_schema": PLAIN.row_schema,
            "indexed_columns": ["replica_id"],
            "buckets": 4,
            "bucket_column": "replica_id",
        }
    )
    spec = spec_of("sizes", old)
    assert spec.partitioning is None and spec.partition_of(2) is None
    assert catalog_record(spec) == old  # written back unchanged: still no assignment
    assert "partitioning" not in catalog_record(PLAIN)


def test_a_damaged_assignment_is_refused_naming_the_collection() -> None:
    raw = json.dumps({**json.loads(catalog_record(_assigned(4, 4))), "partitioning": [1, 2]})
    with pytest.raises(SchemaError, match="partition assignment of sizes in the catalog"):
        spec_of("sizes", raw)


# --- the writers ---------------------------------------------------------------------------


def test_every_request_of_a_bucket_goes_to_its_partition() -> None:
    spec = _assigned(4, 16)
    rows = [((f"r{n}", 0, 1), 1) for n in range(12)]
    appended = messages_for(Append("sizes", "r1", 1, rows, produced_at=0), spec)
    fenced = messages_for(Delete("sizes", eq("replica_id", "r7"), "gone", Fence("r7", 2)), spec)
    fanned = messages_for(Delete("sizes", ge("size", 3), "big"), spec)
    for message in [*appended, *fenced, *fanned]:
        bucket = int(message.key.decode().rpartition("#")[2])
        assert message.partition == spec.partition_of(bucket)
    assert [m.key for m in fenced] == [f"sizes#{bucket_of('r7', 4)}".encode()]
    assert len(fanned) == 4  # one part per bucket, each to its own partition
    # Control requests are keyed by replica id, their partition the key's pick.
    assert partition_for(Heartbeat("r1", 1, 0)) is None
    # Unbucketed: as before, the key picks.
    assert {m.partition for m in messages_for(Append("sizes", "r1", 1, rows, 0), PLAIN)} == {None}


class _Recording:
    """A confluent_kafka.Producer's ``produce``, recorded."""

    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def produce(self, topic: str, **kwargs: Any) -> None:
        self.calls.append({"topic": topic, **kwargs})


def test_the_raw_producers_helper_passes_each_partition() -> None:
    spec = _assigned(4, 16)
    producer = _Recording()
    rows = [((f"r{n}", 0, 1), 1) for n in range(12)]
    sent = produce(producer, "t", Append("sizes", "r1", 1, rows, 0), spec, on_delivery=print)
    assert sent == len(producer.calls) == len({bucket_of(f"r{n}", 4) for n in range(12)})
    for call in producer.calls:
        bucket = int(call["key"].decode().rpartition("#")[2])
        assert call["partition"] == spec.partition_of(bucket) and call["on_delivery"] is print
    produce(producer, "t", Heartbeat("r1", 1, 0))
    assert "partition" not in producer.calls[-1]  # the key picks: not -1 or None passed


def test_a_subscribe_produces_each_part_to_its_buckets_partition() -> None:
    spec = dataclasses.replace(
        PLAIN, buckets=4, bucket_column="worker", partitioning=Partitioning("t", 8, (5, 6, 7, 0))
    )
    broker = Broker()
    _subscribe(broker, spec, PublishedState())
    assert broker.delivered
    for message in broker.delivered:
        bucket = int(message.key().decode().rpartition("#")[2])
        assert message.asked_partition() == (5, 6, 7, 0)[bucket]


# --- creating ------------------------------------------------------------------------------


class _Topic(RequestTopic):
    """A request topic of ``count`` partitions, counting how often Kafka is asked."""

    def __init__(self, count: int) -> None:
        super().__init__("kafka:9092", "t", 4)
        self.count, self.asked = count, 0

    def partitions(self, buckets: int) -> int:
        self.asked += 1
        return self.count


def test_a_new_bucketed_collection_is_assigned_and_an_existing_one_keeps_its_own() -> None:
    old = dataclasses.replace(PLAIN, name="old", buckets=4)  # created before assignments
    kept = dataclasses.replace(_assigned(4, 8), name="kept")
    store = _Store(old, kept)
    topic = _Topic(16)
    wanted = [
        dataclasses.replace(old, partitioning=None),
        dataclasses.replace(kept, partitioning=None),
        dataclasses.replace(PLAIN, name="new", buckets=16),
        dataclasses.replace(PLAIN, name="plain"),
    ]
    created = create_checked(cast(RedisStore, store), wanted, topic)
    assert [spec.partitioning for spec in created] == [
        None,  # no reordering: its buckets' requests stay where their keys' hash put them
        kept.partitioning,
        assign("new", 16, 16, "t"),
        None,
    ]
    assert topic.asked == 1  # only for the new bucketed one
    assert store.created == created


def test_without_kafka_a_new_bucketed_collection_is_refused_in_one_line() -> None:
    with pytest.raises(InfrastructureError) as raised:
        RequestTopic("", "cm.requests", 4).partitions(8)
    assert "CM_KAFKA_BOOTSTRAP" in str(raised.value) and "\n" not in str(raised.value)


# --- show and status -----------------------------------------------------------------------


def test_show_gives_each_buckets_partition_and_states_fewer_partitions() -> None:
    spec = _assigned(8, 4)
    info = collection_info(cast(RedisStore, _Store(spec)), "sizes")
    *_, buckets = describe_tables(info)
    assert [row[-1] for row in buckets.rows] == list(spec.partitioning.assigned)  # type: ignore[union-attr]
    assert buckets.title == (
        "sizes: rows per bucket, on 4 partitions of t, fewer than its 8 buckets: 2 buckets a "
        "partition"
    )
    assert describe_json(info)["partitioning"] == {
        "topic": "t",
        "partitions": 4,
        "assigned": list(spec.partitioning.assigned),  # type: ignore[union-attr]
    }
    whole = collection_info(cast(RedisStore, _Store(_assigned(4, 16))), "sizes")
    assert describe_tables(whole)[-1].title.endswith("on 16 partitions of t, each bucket its own")


def test_status_states_the_collections_on_fewer_partitions_than_buckets() -> None:
    store = _Store(
        _assigned(8, 4, "few"),
        _assigned(4, 16, "enough"),
        dataclasses.replace(PLAIN, name="hashed", buckets=4),
    )
    infos = [collection_info(cast(RedisStore, store), n) for n in ("few", "enough", "hashed")]
    tables = status_tables(consumer_summary(ConsumerRecord.parse({})), infos, recorded=False)
    shared = tables[-1]
    assert shared.title.startswith("bucketed collections on fewer partitions than buckets")
    assert shared.rows == [("few", 8, 4, "t")]
    per_bucket = tables[-2]
    assert {row[-1] for row in per_bucket.rows if row[0] == "hashed"} == {"hash"}
    assert KEY_HASH.startswith("by its keys' hash")
    alone = status_tables(consumer_summary(ConsumerRecord.parse({})), infos[1:], recorded=False)
    assert not alone[-1].title.startswith("bucketed collections on fewer")
