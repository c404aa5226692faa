"""Requests as bytes: Avro single-object encoding with fastavro
(docs/concepts/requests-and-ordering.md).

A message is ``C3 01``, the 8-byte little-endian CRC-64-AVRO fingerprint of the writer's
schema, then the schemaless Avro body. The fingerprint selects the writer schema from a
:class:`~schemas.registry.SchemaRegistry`, which resolves it to the current reader schema.

Decoding never raises anything but :class:`SerializationError` (or its subclass
:class:`UnknownSchemaError`) and :class:`OversizedRequestError`, whatever the bytes.
"""

from __future__ import annotations

import io
from collections.abc import Iterable
from typing import Any

from fastavro import schemaless_reader, schemaless_writer

from collection_manager.core.requests import Append, Request, collection_of
from collection_manager.core.specs import LONG_MAX, LONG_MIN, Value
from schemas.convert import record_to_request, request_to_record
from schemas.errors import OversizedRequestError, SerializationError
from schemas.registry import SchemaRegistry, default_registry

MAGIC = b"\xc3\x01"
HEADER_SIZE = len(MAGIC) + 8
DEFAULT_MAX_REQUEST_BYTES = 1 << 20


def _check_longs(values: Iterable[Value], collection: str) -> None:
    # fastavro would silently write an out-of-range int in the Value union as a double.
    for value in values:
        if isinstance(value, int) and not LONG_MIN <= value <= LONG_MAX:
            raise SerializationError(
                f"value {value} is outside the 64-bit range", collection=collection
            )


def _check_size(size: int, max_bytes: int, collection: str | None) -> None:
    if size > max_bytes:
        raise OversizedRequestError(
            f"request of {size} bytes exceeds the limit of {max_bytes} bytes",
            collection=collection,
        )


def encode_request(
    request: Request,
    *,
    registry: SchemaRegistry | None = None,
    max_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> bytes:
    """The single-object encoding of ``request``: with the registry's current schema when
    it names a bucket, else with its plain one (``SchemaRegistry.plain``: bytes an older
    release reads).

    Raises:
        SerializationError: when a value cannot be written (wrong type, out of range).
        OversizedRequestError: when the encoding is longer than ``max_bytes``.
    """
    registry = default_registry() if registry is None else registry
    collection = collection_of(request)
    if isinstance(request, Append):
        for row, _ in request.updates:
            _check_longs(row, request.collection)
    name, record = request_to_record(request)
    fingerprint, writer = registry.plain
    if record.get("bucket") is not None:  # only the current schema carries a bucket
        fingerprint, writer = registry.fingerprint, registry.reader
    out = io.BytesIO()
    out.write(MAGIC + fingerprint)
    try:
        schemaless_writer(out, writer, {"body": (name, record)})
    except Exception as exc:  # fastavro raises ValueError, TypeError, OverflowError, ...
        raise SerializationError(
            f"cannot encode {type(request).__name__}: {exc}", collection=collection
        ) from exc
    data = out.getvalue()
    _check_size(len(data), max_bytes, collection)
    return data


def _union_index(body: io.BytesIO, branches: int) -> int:
    """Reads the envelope's union branch index (a zigzag varint) and checks it."""
    shift = encoded = 0
    while True:
        byte = body.read(1)
        if not byte or shift > 63:
            raise SerializationError("truncated request: no request kind")
        encoded |= (byte[0] & 0x7F) << shift
        shift += 7
        if byte[0] < 0x80:
            break
    index = (encoded >> 1) ^ -(encoded & 1)
    if not 0 <= index < branches:
        raise SerializationError(f"request kind {index} is not one of the {branches} known")
    return index


def decode_request(
    data: bytes,
    *,
    registry: SchemaRegistry | None = None,
    max_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
) -> Request:
    """The request of a single-object encoded message.

    Raises:
        OversizedRequestError: when ``data`` is longer than ``max_bytes``.
        UnknownSchemaError: when no registered schema has the message's fingerprint.
        SerializationError: for anything else that is not a well-formed request.
    """
    registry = default_registry() if registry is None else registry
    _check_size(len(data), max_bytes, None)
    if len(data) < HEADER_SIZE or data[:2] != MAGIC:
        raise SerializationError(
            f"not an Avro single-object message (starts with {data[:HEADER_SIZE].hex()!r})"
        )
    branches = registry.branches(bytes(data[2:HEADER_SIZE]))
    body = io.BytesIO(data)
    body.seek(HEADER_SIZE)
    try:
        branch = branches[_union_index(body, len(branches))]
        if not branch.known:
            raise SerializationError(f"request kind {branch.name} is unknown to this reader")
        record: Any = schemaless_reader(body, branch.writer, branch.reader)
        request = record_to_request(branch.name, record)
    except SerializationError:
        raise
    except Exception as exc:  # undecodable bytes surface as many kinds of errors
        raise SerializationError(f"undecodable request body: {exc!r}") from exc
    if body.tell() != len(data):
        raise SerializationError(f"{len(data) - body.tell()} bytes after the request body")
    return request
