"""A change as a record of a sink's topic (collection_manager/sinks/records.py): the key
rule, and both formats read back as a plain reader reads them."""

from __future__ import annotations

import io
import json

from fastavro import parse_schema, schemaless_reader
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.core.specs import CollectionSpec
from collection_manager.sinks.records import Encoder, decode, envelope_schema, key_of
from schemas.registry import schema_fingerprint
from tests.support import SIZES_SCHEMA

SPEC = CollectionSpec(
    "sizes",
    SIZES_SCHEMA,
)
_rows = st.tuples(st.text(max_size=5), st.integers(-(2**63), 2**63 - 1), st.none() | st.text())


@given(
    _rows, st.integers(-5, 5).filter(bool), st.integers(0, 2**40), st.none() | st.integers(0, 63)
)
def test_both_formats_read_back_as_the_envelope(row, diff, time, bucket) -> None:  # type: ignore[no-untyped-def]
    expected = {
        "row": {"replica_id": row[0], "worker_id": row[1], "note": row[2]},
        "diff": diff,
        "time": time,
        "bucket": bucket,
        "cut": "3,4",
    }
    for fmt in ("json", "avro"):
        value = Encoder(SPEC, fmt).value(row, diff, time, bucket, "3,4")
        assert dict(decode(SPEC, fmt, value)) == expected
    # What the docs tell a plain reader: strip the 10-byte header, read with the schema.
    value = Encoder(SPEC, "avro").value(row, diff, time, bucket, "3,4")
    schema = envelope_schema(SPEC)
    assert value[:2] == b"\xc3\x01" and value[2:10] == schema_fingerprint(schema)
    assert schemaless_reader(io.BytesIO(value[10:]), parse_schema(schema)) == expected


def test_the_key_is_the_row_as_a_json_array_in_column_order() -> None:
    assert key_of(("r1", 3, None)) == b'["r1",3,null]'
    assert json.loads(key_of(("r1", 2**62, "x"))) == ["r1", 2**62, "x"]
