"""A snapshot's rows as the bytes of an answer: JSON, NDJSON or an Arrow IPC stream.

JSON is ``query --format json``'s document, whole (its rows are bounded by
``CM_HTTP_MAX_ROWS``). NDJSON and Arrow are written as they are made, a bounded batch at a
time, so an answer of millions of rows is never one more copy of them in memory: NDJSON a
header line with ``collection`` and ``as_of``, then one ``{"row", "count"}`` line per row;
Arrow a schema (the columns, then the multiplicity) whose metadata holds ``collection``
and ``as_of``, then record batches.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator

import pyarrow as pa

from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.reading.rows import as_object, as_of_value, query_json
from collection_manager.storage.reads import Snapshot

# Rows per NDJSON write and per Arrow record batch: large enough that the per-batch costs
# vanish, small enough that a batch is a few MB at most.
BATCH_ROWS = 8_192

_ARROW_TYPES = {
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}


def _dumps(value: object) -> bytes:
    # Compact, and non-ASCII text as UTF-8 (the answers say charset=utf-8).
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def json_answer(spec: CollectionSpec, snapshot: Snapshot) -> bytes:
    """``{"collection", "as_of", "rows": [{"row", "count"}]}``, rows ordered by value:
    the document ``query --format json`` prints for the same read."""
    return _dumps(query_json(spec, snapshot)) + b"\n"


def _batches(snapshot: Snapshot) -> Iterator[list[tuple[Row, int]]]:
    items = iter(snapshot.rows.items())
    while batch := list(itertools.islice(items, BATCH_ROWS)):
        yield batch


def ndjson_answer(spec: CollectionSpec, snapshot: Snapshot) -> Iterator[bytes]:
    """A header line ``{"collection", "as_of"}``, then ``{"row", "count"}`` per row, in the
    order the read found them."""
    yield _dumps({"collection": spec.name, "as_of": as_of_value(snapshot)}) + b"\n"
    for batch in _batches(snapshot):
        yield b"".join(
            _dumps({"row": as_object(spec, row), "count": count}) + b"\n" for row, count in batch
        )


def count_field(spec: CollectionSpec) -> str:
    """The name of the multiplicity in an Arrow answer: ``count``, or ``(count)`` when a
    column is named ``count`` (as the command line's tables head it)."""
    return "(count)" if "count" in spec.column_names else "count"


def arrow_schema(spec: CollectionSpec, snapshot: Snapshot) -> pa.Schema:
    """The columns with their types and nullability, then the multiplicity (int64); the
    metadata names the collection and ``as_of`` (as text: a time or a cut)."""
    fields = [pa.field(c.name, _ARROW_TYPES[c.type], nullable=c.nullable) for c in spec.columns]
    fields.append(pa.field(count_field(spec), pa.int64(), nullable=False))
    metadata = {"collection": spec.name, "as_of": str(as_of_value(snapshot))}
    return pa.schema(fields, metadata=metadata)


class _Sink:
    """Collects what the Arrow writer writes, to hand it on batch by batch."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []

    def write(self, data: bytes) -> int:
        self.parts.append(bytes(data))
        return len(data)

    def flush(self) -> None:
        pass

    @property
    def closed(self) -> bool:
        return False

    def take(self) -> bytes:
        data, self.parts = b"".join(self.parts), []
        return data


def arrow_answer(spec: CollectionSpec, snapshot: Snapshot) -> Iterator[bytes]:
    """The Arrow IPC stream of the rows: the schema, a record batch per
    :data:`BATCH_ROWS` rows in the order the read found them, and the end marker."""
    schema = arrow_schema(spec, snapshot)
    sink = _Sink()
    with pa.ipc.new_stream(pa.PythonFile(sink, mode="w"), schema) as writer:
        yield sink.take()
        for batch in _batches(snapshot):
            columns = [list(values) for values in zip(*(row for row, _ in batch), strict=True)]
            if not columns:  # a collection without columns: only the counts
                columns = [[] for _ in spec.columns]
            arrays = [
                pa.array(values, type=field.type)
                for values, field in zip(columns, schema, strict=False)
            ]
            arrays.append(pa.array([count for _, count in batch], type=pa.int64()))
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            yield sink.take()
    yield sink.take()
