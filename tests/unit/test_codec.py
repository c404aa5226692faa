"""The wire protocol: single-object encoding, round trips, evolution and hostile bytes."""

from __future__ import annotations

import contextlib
import copy
import io
from typing import Any

import pytest
from fastavro import parse_schema, schemaless_writer
from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager import release
from collection_manager.core.buckets import BucketPart
from collection_manager.core.filters import (
    MAX_DEPTH,
    MAX_NODES,
    Cmp,
    Filter,
    Not,
    and_,
    eq,
    in_,
    or_,
)
from collection_manager.core.requests import (
    Append,
    Delete,
    Fence,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    Request,
)
from schemas.codec import HEADER_SIZE, MAGIC, decode_request, encode_request
from schemas.convert import NAMESPACE, filter_to_nodes, nodes_to_filter
from schemas.errors import OversizedRequestError, SerializationError, UnknownSchemaError
from schemas.registry import SchemaRegistry, default_registry, request_schema, schema_fingerprint
from tests.unit.strategies import wire_requests

SETTINGS = settings(max_examples=200, deadline=None)

EXAMPLES: list[Request] = [
    Append(
        "compute_frontiers",
        "r1",
        3,
        ((("r1", "e1", 0, None), 1), (("r1", "e1", 1, 7), -2)),
        produced_at=1_700_000_000_000,
        valid_until=1_700_000_060_000,
        ttl_ms=5_000,
    ),
    Append("replica_metrics", "r1", 1, ((("r1", 0.25, 1 << 40), 1), (("r1", True, "x"), 1)), 0),
    Delete("c", and_(eq("replica_id", "r1"), or_(in_("w", [1, 2]), Not(eq("f", 1.5)))), "why"),
    Delete("c", eq("replica_id", "r1"), "removed", Fence("r1", 4)),
    ReplicaAdded("r1", 2),
    ReplicaRemoved("r1", 2),
    Heartbeat("r1", 2, sent_at=123),
    Heartbeat("r1", 2),
]


@pytest.mark.parametrize("request_", EXAMPLES, ids=lambda r: type(r).__name__)
def test_round_trip(request_: Request) -> None:
    data = encode_request(request_)
    assert data[:2] == MAGIC
    # A request that names no bucket is written with the oldest released schema: bytes a
    # consumer of 0.1.0 reads (docs/concepts/upgrades.md).
    assert data[2:HEADER_SIZE] == default_registry().plain[0] != default_registry().fingerprint
    assert decode_request(data) == request_


@pytest.mark.parametrize(
    "request_",
    [
        Append("c", "r1", 1, ((("r1", 1), 1),), 0, bucket=BucketPart(3)),
        Delete("c", Cmp("eq", "replica_id", "r1"), bucket=BucketPart(1, "g" * 32, 4)),
    ],
    ids=["Append", "Delete"],
)
def test_a_request_naming_its_bucket_is_written_with_the_current_schema(
    request_: Request,
) -> None:
    data = encode_request(request_)
    assert data[2:HEADER_SIZE] == default_registry().fingerprint
    assert decode_request(data) == request_


def test_values_keep_their_kind() -> None:
    row = (None, True, False, 0, 1, 1.0, -0.5, "", "é")
    decoded = decode_request(encode_request(Append("c", "r", 1, ((row, 1),), 0)))
    assert isinstance(decoded, Append)
    assert [type(v) for v in decoded.updates[0][0]] == [type(v) for v in row]


@SETTINGS
@given(wire_requests)
def test_decode_inverts_encode(request_: Request) -> None:
    assert decode_request(encode_request(request_)) == request_


def _crc64_avro(data: bytes) -> int:
    """CRC-64-AVRO as the Avro specification defines it, to check fastavro's."""
    empty = 0xC15D213AA4D7A795
    table = []
    for i in range(256):
        fp = i
        for _ in range(8):
            fp = (fp >> 1) ^ (empty & -(fp & 1))
        table.append(fp)
    fp = empty
    for byte in data:
        fp = (fp >> 8) ^ table[(fp ^ byte) & 0xFF]
    return fp


def test_fingerprint_is_the_little_endian_crc64_avro_of_the_canonical_form() -> None:
    from fastavro.schema import to_parsing_canonical_form

    assert schema_fingerprint("null") == (7195948357588979594).to_bytes(8, "little")  # type: ignore[arg-type]
    canonical = to_parsing_canonical_form(request_schema()).encode()
    assert schema_fingerprint(request_schema()) == _crc64_avro(canonical).to_bytes(8, "little")


def _v2_schema() -> dict[str, Any]:
    """The request schema with a field added to Append, with a default."""
    schema = request_schema()
    append = schema["fields"][0]["type"][0]
    assert append["name"] == "Append"
    append["fields"].append({"name": "region", "type": "string", "default": "eu"})
    return schema


def test_newer_reader_decodes_older_writer() -> None:
    v2 = SchemaRegistry(_v2_schema())
    v1_fingerprint = v2.register(request_schema())
    assert v1_fingerprint == default_registry().fingerprint != v2.fingerprint
    v1 = SchemaRegistry(request_schema())
    for request_ in EXAMPLES:
        assert decode_request(encode_request(request_, registry=v1), registry=v2) == request_


def test_older_reader_decodes_newer_writer_once_registered() -> None:
    v2 = SchemaRegistry(_v2_schema())
    data = encode_request(EXAMPLES[0], registry=v2)
    unknown = f"unknown schema fingerprint {v2.fingerprint.hex()}: written with a request "
    with pytest.raises(UnknownSchemaError, match=unknown) as raised:
        decode_request(data)
    assert f"collection-manager {release.version()} does not know" in str(raised.value)
    v1 = SchemaRegistry(request_schema())
    v1.register(_v2_schema())
    assert v2.fingerprint in v1
    assert decode_request(data, registry=v1) == EXAMPLES[0]


def test_request_schema_is_a_fresh_copy() -> None:
    request_schema()["fields"].clear()
    assert request_schema()["fields"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b"", "not an Avro single-object message"),
        (b"\xc3\x01\x00", "not an Avro single-object message"),
        (b"{" + bytes(20), "not an Avro single-object message"),
    ],
)
def test_garbage_is_a_serialization_error(data: bytes, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        decode_request(data)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (b"\x0a", "request kind 5 is not one of the 5 known"),
        (b"\x01", "request kind -1 is not one of the 5 known"),
        (b"\x80\x80", "truncated request: no request kind"),
    ],
)
def test_a_bad_request_kind_is_named(body: bytes, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        decode_request(MAGIC + default_registry().fingerprint + body)


def test_a_request_kind_the_reader_lacks_is_refused() -> None:
    newer = request_schema()
    newer["fields"][0]["type"].append(
        {"type": "record", "name": "Drain", "fields": [{"name": "why", "type": "string"}]}
    )
    reader = SchemaRegistry(request_schema())
    key = reader.register(newer)
    data = MAGIC + key + b"\x0a" + b"\x06now"  # branch 5, the string "now"
    with pytest.raises(SerializationError, match="Drain is unknown to this reader"):
        decode_request(data, registry=reader)


def test_truncated_and_padded_messages_are_refused() -> None:
    data = encode_request(EXAMPLES[0])
    for end in range(HEADER_SIZE, len(data)):
        with pytest.raises(SerializationError):
            decode_request(data[:end])
    with pytest.raises(SerializationError, match="1 bytes after the request body"):
        decode_request(data + b"\x00")


def _decode_or_refuse(message: bytes) -> None:
    """Decoding gives a request or raises SerializationError; nothing else, no crash."""
    with contextlib.suppress(SerializationError):
        decoded = decode_request(message)
        assert isinstance(decoded, Append | Delete | ReplicaAdded | ReplicaRemoved | Heartbeat)


@SETTINGS
@given(st.binary(max_size=200))
def test_random_bytes_never_crash_the_decoder(data: bytes) -> None:
    for message in (data, MAGIC + default_registry().fingerprint + data):
        _decode_or_refuse(message)


@SETTINGS
@given(wire_requests, st.data())
def test_corrupted_messages_decode_or_raise_serialization_errors(
    request_: Request, data: st.DataObject
) -> None:
    message = bytearray(encode_request(request_))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(HEADER_SIZE, len(message) - 1))
        message[position] = data.draw(st.integers(0, 255))
    _decode_or_refuse(bytes(message))


def test_size_limits() -> None:
    big = Append("c", "r", 1, tuple((("r", i), 1) for i in range(1000)), 0)
    data = encode_request(big)
    with pytest.raises(OversizedRequestError, match=r"exceeds the limit of 100 bytes") as caught:
        encode_request(big, max_bytes=100)
    assert caught.value.collection == "c"
    with pytest.raises(OversizedRequestError):
        decode_request(data, max_bytes=len(data) - 1)
    assert decode_request(data, max_bytes=len(data)) == big


@pytest.mark.parametrize(
    ("request_", "message"),
    [
        (Append("c", "r", 1, ((("r", 2**63), 1),), 0), "outside the 64-bit range"),
        (Append("c", "r", 1, ((("r", b"x"), 1),), 0), "cannot encode Append"),  # type: ignore[arg-type]
        (Append("c", "r", 2**64, (), 0), "cannot encode Append"),
    ],
)
def test_unencodable_requests(request_: Request, message: str) -> None:
    with pytest.raises(SerializationError, match=message):
        encode_request(request_)


def _raw_delete(nodes: list[dict[str, Any]]) -> bytes:
    """A Delete message with hand-made filter nodes (which encode_request would not make)."""
    registry = default_registry()
    out = io.BytesIO(MAGIC + registry.fingerprint)
    out.seek(0, 2)
    record = {"collection": "c", "filter": nodes, "fence": None, "reason": ""}
    schemaless_writer(out, registry.reader, {"body": (f"{NAMESPACE}.Delete", record)})
    return out.getvalue()


def _node(op: str, column: str | None = None, value: Any = None, arity: int = 0) -> dict[str, Any]:
    return {"op": op, "column": column, "value": value, "values": [], "arity": arity}


LEAF = _node("eq", "a", 1)


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        ([_node("not", arity=1)] * 10_000 + [LEAF], "more than 1000"),
        ([_node("not", arity=1)] * MAX_DEPTH + [LEAF], "deeper than 32"),
        ([_node("and", arity=1)] * MAX_DEPTH + [LEAF], "deeper than 32"),
        ([_node("or", arity=1)] * (MAX_DEPTH + 1) + [LEAF], "deeper than 32"),
        ([_node("and", arity=MAX_NODES)] + [LEAF] * MAX_NODES, "more than 1000"),
        ([], "empty or truncated"),
        ([_node("and", arity=2), LEAF], "empty or truncated"),
        ([LEAF, LEAF], "after its root"),
        ([_node("not", arity=2), LEAF, LEAF], "arity 2"),
        ([_node("or", arity=-1)], "arity -1"),
        ([_node("eq")], "has no column"),
        ([_node("prefix", "a", 1)], "needs a string"),
    ],
)
def test_hostile_filters_are_serialization_errors(
    nodes: list[dict[str, Any]], message: str
) -> None:
    # A recursive Avro type here would let a few kB of nesting overflow fastavro's C stack.
    with pytest.raises(SerializationError, match=message):
        decode_request(_raw_delete(nodes))


def test_filter_nodes_round_trip_at_the_limits() -> None:
    leaf = eq("a", 1)
    deep: Filter = leaf
    for _ in range(MAX_DEPTH - 1):
        deep = Not(deep)
    assert nodes_to_filter(filter_to_nodes(deep)) == deep
    assert nodes_to_filter(filter_to_nodes(leaf)) == leaf
    assert nodes_to_filter([_node("and", arity=0)]) == and_()


def test_unknown_union_branch_is_refused() -> None:
    from schemas.convert import record_to_request

    with pytest.raises(SerializationError, match="unknown request kind"):
        record_to_request(f"{NAMESPACE}.Mystery", {})


def test_parsed_schema_is_shared() -> None:
    assert default_registry() is default_registry()
    parsed: Any = parse_schema(copy.deepcopy(request_schema()))
    assert parsed["name"] == f"{NAMESPACE}.Request"
