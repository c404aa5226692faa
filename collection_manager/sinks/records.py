"""A change as a Kafka record of a sink's topic (docs/concepts/sinks.md, "Records").

The key is the row as compact JSON, its values in column order (``["r1",0,41]``), in both
formats: Kafka's partitioner then puts every change of a row in one partition, in order.
The value is the change's envelope: the row (by column), its diff, its time (a bucketed
collection's: its bucket's, with the bucket), and the cut of the transaction that
published it, so a reader knows which changes belong to one consistent state. ``json``
writes the envelope as a JSON object; ``avro`` as Avro single-object encoding (``C3 01``,
the 8-byte CRC-64-AVRO fingerprint of :func:`envelope_schema`, the body), as the request
topic is written. A header ``cm.cut`` repeats the cut for readers that do not decode.
"""

from __future__ import annotations

import copy
import io
from collections.abc import Mapping
from typing import Any

import orjson
from fastavro import parse_schema, schemaless_reader, schemaless_writer

from collection_manager.core import json_text
from collection_manager.core.specs import CollectionSpec, Row
from schemas.codec import MAGIC
from schemas.registry import schema_fingerprint

CUT_HEADER = "cm.cut"
ENVELOPE_NAME = "collection_manager.sink.Change"


def envelope_schema(spec: CollectionSpec) -> dict[str, Any]:
    """The Avro schema of an ``avro`` sink's values: the row as the collection's own row
    schema, the diff, the time, the bucket (null when unbucketed) and the cut."""
    return {
        "type": "record",
        "name": ENVELOPE_NAME,
        "fields": [
            {"name": "row", "type": copy.deepcopy(dict(spec.row_schema))},
            {"name": "diff", "type": "long"},
            {"name": "time", "type": "long"},
            {"name": "bucket", "type": ["null", "int"], "default": None},
            {"name": "cut", "type": "string"},
        ],
    }


def key_of(row: Row) -> bytes:
    """The record's key: the row's values as a compact JSON array."""
    return json_text.compact(list(row))


def envelope(
    spec: CollectionSpec, row: Row, diff: int, time: int, bucket: int | None, cut: str
) -> dict[str, Any]:
    """The value of a change, as a mapping (what ``json`` writes, and ``avro`` encodes)."""
    return {
        "row": dict(zip(spec.column_names, row, strict=True)),
        "diff": diff,
        "time": time,
        "bucket": bucket,
        "cut": cut,
    }


class Encoder:
    """Encodes the changes of one collection in one format."""

    def __init__(self, spec: CollectionSpec, format: str) -> None:
        self.spec, self.format = spec, format
        self._avro: tuple[bytes, Any] | None = None
        if format == "avro":
            schema = envelope_schema(spec)
            self._avro = (MAGIC + schema_fingerprint(schema), parse_schema(schema))

    def value(self, row: Row, diff: int, time: int, bucket: int | None, cut: str) -> bytes:
        document = envelope(self.spec, row, diff, time, bucket, cut)
        if self._avro is None:
            return json_text.compact(document)
        header, parsed = self._avro
        out = io.BytesIO()
        out.write(header)
        schemaless_writer(out, parsed, document)
        return out.getvalue()


def decode(spec: CollectionSpec, format: str, value: bytes) -> Mapping[str, Any]:
    """A sink's value as its envelope, as a reader decodes it (the docs' example does the
    same with plain fastavro or json)."""
    if format == "json":
        loaded: Mapping[str, Any] = orjson.loads(value)
        return loaded
    if value[:2] != MAGIC:
        raise ValueError("not Avro single-object encoding")
    schema = envelope_schema(spec)
    if value[2:10] != schema_fingerprint(schema):
        raise ValueError("written with another envelope schema")
    decoded = schemaless_reader(io.BytesIO(value[10:]), parse_schema(schema))
    if not isinstance(decoded, Mapping):
        raise ValueError("not an envelope")
    return decoded
