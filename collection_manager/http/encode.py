"""A snapshot's rows as the bytes of an answer: JSON, NDJSON or an Arrow IPC stream.

JSON is ``query --format json``'s document, whole (its rows are bounded by
``CM_HTTP_MAX_ROWS``). NDJSON and Arrow encode the steps of a streamed read
(``storage/streamed.py``) as they come, one part of the answer per step, so an answer of
millions of rows never holds more than one step: NDJSON a header line with ``collection``
and ``as_of``, then one ``{"row", "count"}`` line per row; Arrow a schema (the columns, then
the multiplicity) whose metadata holds ``collection`` and ``as_of``, then a record batch
per step.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping

import pyarrow as pa

from collection_manager.core import json_text
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.reading.rows import as_object, query_json
from collection_manager.storage.reads import Snapshot

# A step's rows, as a streamed read hands them on.
Steps = Iterable[Mapping[Row, int]]

_ARROW_TYPES = {
    "long": pa.int64(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "string": pa.string(),
}


def _dumps(value: object) -> bytes:
    # Compact, and non-ASCII text as UTF-8 (the answers say charset=utf-8).
    return json_text.compact(value)


def json_answer(spec: CollectionSpec, snapshot: Snapshot) -> bytes:
    """``{"collection", "as_of", "rows": [{"row", "count"}]}``, rows ordered by value:
    the document ``query --format json`` prints for the same read."""
    return _dumps(query_json(spec, snapshot)) + b"\n"


def ndjson_answer(spec: CollectionSpec, as_of: int | str, steps: Steps) -> Iterator[bytes]:
    """A header line ``{"collection", "as_of"}``, then ``{"row", "count"}`` per row, in the
    order the read found them: one part per step, made when the step comes."""
    yield _dumps({"collection": spec.name, "as_of": as_of}) + b"\n"
    for step in steps:
        yield b"".join(
            _dumps({"row": as_object(spec, row), "count": count}) + b"\n"
            for row, count in step.items()
        )


def count_field(spec: CollectionSpec) -> str:
    """The name of the multiplicity in an Arrow answer: ``count``, or ``(count)`` when a
    column is named ``count`` (as the command line's tables head it)."""
    return "(count)" if "count" in spec.column_names else "count"


def arrow_schema(spec: CollectionSpec, as_of: int | str) -> pa.Schema:
    """The columns with their types and nullability, then the multiplicity (int64); the
    metadata names the collection and ``as_of`` (as text: a time or a cut)."""
    fields = [pa.field(c.name, _ARROW_TYPES[c.type], nullable=c.nullable) for c in spec.columns]
    fields.append(pa.field(count_field(spec), pa.int64(), nullable=False))
    metadata = {"collection": spec.name, "as_of": str(as_of)}
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


def arrow_answer(spec: CollectionSpec, as_of: int | str, steps: Steps) -> Iterator[bytes]:
    """The Arrow IPC stream of the rows: the schema, a record batch per step (made when the
    step comes) in the order the read found them, and the end marker."""
    schema = arrow_schema(spec, as_of)
    sink = _Sink()
    with pa.ipc.new_stream(pa.PythonFile(sink, mode="w"), schema) as writer:
        yield sink.take()
        for step in steps:
            if not step:
                continue
            # The rows' columns straight from the step's keys, its counts from its values
            # (a dict iterates both in one order): no list of pairs, no copy per column.
            columns = list(zip(*step, strict=True))
            arrays = [
                pa.array(values, type=field.type)
                for values, field in zip(columns, schema, strict=False)
            ]  # a collection without columns: no arrays, only the counts
            arrays.append(pa.array(list(step.values()), type=pa.int64()))
            writer.write_batch(pa.RecordBatch.from_arrays(arrays, schema=schema))
            yield sink.take()
    yield sink.take()
