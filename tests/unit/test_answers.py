"""The answers' models: what they write is what their schema says and what decodes back.

One definition serves the API, the commands' JSON and the client (collection_manager/
answers), so these hold the three together: every model written by ``to_json`` is valid
against the schema made from its types, and ``decode`` gives the same model back; a
document that breaks the shape names the field.
"""

from __future__ import annotations

from typing import Any

import jsonschema_rs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.answers import MODELS, ShapeError, decode, schemas, to_json
from collection_manager.answers.models import (
    BucketRows,
    Collection,
    CollectionDetail,
    CollectionList,
    Column,
    Replica,
    ReplicaList,
    Ttl,
)
from collection_manager.answers.rows import Rows
from collection_manager.answers.status import Status
from collection_manager.cli.status import (
    EXAMPLE_CONSUMER,
    EXAMPLE_CONTROLLER,
    EXAMPLE_UNPUBLISHED,
    example_bucketed,
)
from collection_manager.core.buckets import MAX_BUCKETS
from collection_manager.core.cut import Cut
from collection_manager.core.partitions import Partitioning
from collection_manager.core.sinks.spec import SinkSpec
from collection_manager.reading.catalog import CollectionInfo
from collection_manager.reading.rows import query_json
from collection_manager.reading.sinks import sink_summary
from collection_manager.reading.status import consumer_summary, status_json
from collection_manager.storage.consumer_status import ConsumerRecord
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.heartbeats import Liveness
from collection_manager.storage.reads import Snapshot
from schemas.introspection import introspection_spec

SCHEMAS = schemas(*MODELS)


def _valid(model: type, document: Any) -> None:
    root = {"components": {"schemas": SCHEMAS}, "$ref": f"#/components/schemas/{model.__name__}"}
    jsonschema_rs.Draft202012Validator(root).validate(document)


_text = st.text(max_size=8)
_int = st.integers(-(2**53) + 1, 2**53 - 1)
_count = st.integers(0, 2**53 - 1)
_columns = st.lists(
    st.builds(
        Column,
        _text,
        st.sampled_from(["long", "double", "boolean", "string"]),
        st.booleans(),
        st.booleans(),
    ),
    max_size=4,
).map(tuple)
_listed = dict(
    name=_text,
    rows=_count,
    time=_int,
    columns=_columns,
    indexed_columns=st.lists(_text, max_size=3).map(tuple),
    buckets=st.integers(1, MAX_BUCKETS),
    bucket_column=st.none() | _text,
)
_details = st.builds(
    CollectionDetail,
    **_listed,
    counters=st.dictionaries(_text, _count, max_size=3),
    ttl=st.builds(Ttl, _count, st.none() | _int),
    row_schema=st.fixed_dictionaries({"type": st.just("record"), "name": _text}),
    bucket_rows=st.lists(st.builds(BucketRows, _count, _count, _int), max_size=3).map(tuple),
    partitioning=st.none()
    | st.integers(1, 64).flatmap(
        lambda count: st.builds(
            Partitioning,
            _text.filter(bool),
            st.just(count),
            st.lists(st.integers(0, count - 1), min_size=2, max_size=MAX_BUCKETS).map(tuple),
        )
    ),
)
_replicas = st.builds(
    Replica,
    _text,
    _count,
    st.sampled_from(["active", "removing", "removed"]),
    st.none() | _int,
    st.none() | _int,
    st.none() | _int,
    _int,
    _text,
)


@given(st.lists(st.builds(Collection, **_listed), max_size=3).map(tuple))
def test_a_listing_is_valid_against_its_schema_and_decodes_back(listed: tuple[Any, ...]) -> None:
    model = CollectionList(listed)
    _valid(CollectionList, to_json(model))
    assert decode(CollectionList, to_json(model)) == model


@given(_details)
def test_a_collection_detail_is_valid_against_its_schema_and_decodes_back(
    detail: CollectionDetail,
) -> None:
    _valid(CollectionDetail, to_json(detail))
    assert decode(CollectionDetail, to_json(detail)) == detail


@given(st.lists(_replicas, max_size=3).map(tuple), _int, _text)
def test_the_replicas_are_valid_against_their_schema_and_decode_back(
    replicas: tuple[Replica, ...], at_ms: int, namespace: str
) -> None:
    model = ReplicaList(at_ms, namespace, replicas)
    _valid(ReplicaList, to_json(model))
    assert decode(ReplicaList, to_json(model)) == model


def test_every_field_is_required_and_null_is_said_not_left_out() -> None:
    replica = SCHEMAS["Replica"]
    assert replica["required"] == list(replica["properties"])
    assert replica["properties"]["lease_left_ms"]["type"] == ["integer", "null"]
    assert replica["properties"]["state"] == {"enum": ["active", "removing", "removed"]}
    buckets = SCHEMAS["Collection"]["properties"]["buckets"]
    assert (buckets["minimum"], buckets["maximum"]) == (1, MAX_BUCKETS)
    assert SCHEMAS["CollectionList"]["properties"]["collections"]["items"] == {
        "$ref": "#/components/schemas/Collection"
    }


def _replica_document(**changes: Any) -> dict[str, Any]:
    replica = Replica("r1", 2, "active", 10, 5, None, 1, "")
    return {**to_json(replica), **changes}


@pytest.mark.parametrize(
    ("changes", "said"),
    [
        ({"epoch": "2"}, "replicas[0].epoch: int expected, not a string"),
        ({"epoch": True}, "replicas[0].epoch: int expected, not a boolean"),
        ({"state": "gone"}, "replicas[0].state: one of ['active', 'removing', 'removed']"),
        ({"lease_left_ms": 1.5}, "replicas[0].lease_left_ms: int expected, not a number"),
    ],
)
def test_a_field_of_another_type_is_named_by_its_path(changes: dict[str, Any], said: str) -> None:
    document = {"at_ms": 1, "namespace": "n", "replicas": [_replica_document(**changes)]}
    with pytest.raises(ShapeError, match=said.replace("[", r"\[").replace("]", r"\]")) as raised:
        decode(ReplicaList, document)
    assert raised.value.path.startswith("replicas[0].")


def test_a_missing_field_or_a_broken_bound_is_named_and_extra_fields_are_ignored() -> None:
    document = _replica_document()
    del document["reason"]
    with pytest.raises(ShapeError, match=r"^reason: missing$"):
        decode(Replica, document)
    listed = to_json(Collection("c", 1, 2, (), (), 1, None))
    with pytest.raises(ShapeError, match="buckets: 0 is below its minimum 1"):
        decode(Collection, {**listed, "buckets": 0})
    with pytest.raises(ShapeError, match="an object was expected, not an array"):
        decode(Collection, [])
    newer = {**listed, "a_field_of_a_newer_server": 1}
    assert decode(Collection, newer) == Collection("c", 1, 2, (), (), 1, None)


@pytest.mark.parametrize("kafka", ["reachable", "unreachable"])
def test_the_status_status_prints_is_valid_against_its_schema_and_decodes(kafka: str) -> None:
    counters = dict.fromkeys(SHOWN_COUNTERS, 1)
    plain = CollectionInfo(introspection_spec("compute_frontiers"), 2, 42, counters)
    consumer = consumer_summary(ConsumerRecord.parse({"batches": "3"}), {"cm.requests:0": 5}, kafka)
    for document in (
        status_json(
            EXAMPLE_CONSUMER,
            EXAMPLE_UNPUBLISHED,
            [plain, example_bucketed(counters)],
            ["another.topic"],
            EXAMPLE_CONTROLLER,
            [sink_summary(SinkSpec("out", "c", "t"), Liveness(True, {"position": "4,2"}))],
        ),
        status_json(consumer, EXAMPLE_UNPUBLISHED, [], (), None),  # the controller not read
    ):
        _valid(Status, document)
        assert to_json(decode(Status, document)) == document
    assert (consumer["lag"] is None) == (kafka != "reachable")


_frontier_rows = st.dictionaries(
    st.tuples(_text, _text, st.integers(0, 3), st.none() | _int),
    st.integers(-3, 3).filter(bool),
    max_size=5,
)


@given(_frontier_rows, _count, st.booleans())
def test_what_a_read_writes_is_valid_against_the_rows_schema(
    rows: dict[Any, int], as_of: int, bucketed: bool
) -> None:
    # query_json writes the Rows shape straight (the hot path); the schema is the model's.
    spec = introspection_spec("compute_frontiers")
    cut = Cut((as_of, 0, 7)) if bucketed else None
    document = query_json(spec, Snapshot(rows, as_of + 7 if bucketed else as_of, cut))
    _valid(Rows, document)
    assert decode(Rows, document).as_of == (cut.text() if cut else as_of)
