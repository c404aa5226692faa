"""Turning one partition's Kafka records into valid requests and dead letters (pure).

A record that does not decode, uses an unknown schema, is too large, breaks the name rule,
names an unknown collection, holds a row that does not fit its schema or an invalid
filter, sets ``ttl_ms``, claims an epoch the controller never issued, or comes from a
collected incarnation becomes a dead letter with a reason; the valid records around it
keep their order.

Two steps, both pure: :func:`decode_records` needs only the catalog; the applier then
reads the epoch authority of the replicas the requests name (one round trip per partition
chunk) and :func:`refuse_unissued` moves the requests it refuses to the dead letters.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from collection_manager.core.epochs import EpochAuthority, check_issued
from collection_manager.core.errors import CollectionManagerError, SchemaError
from collection_manager.core.requests import Append, Delete, Request, request_key, validate_request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.planning import OffsetRequest
from schemas.codec import decode_request
from schemas.errors import SerializationError


@dataclasses.dataclass(frozen=True)
class KafkaRecord:
    """One record of the request topic, as Spark's Kafka source delivers it."""

    topic: str
    partition: int
    offset: int
    key: bytes | None
    value: bytes | None


@dataclasses.dataclass(frozen=True)
class DeadLetter:
    """A record that could not be applied, with why (``kind`` is the error class name)."""

    record: KafkaRecord
    kind: str
    reason: str


@dataclasses.dataclass
class Decoded:
    """A partition's valid requests in offset order, and its dead letters."""

    requests: list[OffsetRequest] = dataclasses.field(default_factory=list)
    dead_letters: list[DeadLetter] = dataclasses.field(default_factory=list)


def decode_record(
    record: KafkaRecord, specs: Mapping[str, CollectionSpec], max_bytes: int
) -> Request:
    """The valid request of ``record``, checked against the catalog ``specs``.

    Raises:
        CollectionManagerError: a subclass naming what is wrong with the record.
    """
    if record.value is None:
        raise SerializationError("a record without a value (a tombstone) is no request")
    request = decode_request(record.value, max_bytes=max_bytes)
    validate_request(request, specs)
    if isinstance(request, Append | Delete) and request.bucket is not None:
        # A bucket's requests keep their order only if they share its key's partition.
        key = request_key(request)
        if record.key != key.encode():
            raise SchemaError(
                f"a request for bucket {request.bucket.bucket} of {request.collection} must be "
                f"keyed {key!r} (the bucket key rule: <collection>#<bucket>), not "
                f"{record.key!r}",
                collection=request.collection,
            )
    return request


def decode_records(
    records: Iterable[KafkaRecord], specs: Mapping[str, CollectionSpec], max_bytes: int
) -> Decoded:
    """Decodes and validates records (one partition, offset order)."""
    out = Decoded()
    for record in records:
        try:
            out.requests.append((record.offset, decode_record(record, specs, max_bytes)))
        except CollectionManagerError as exc:
            out.dead_letters.append(DeadLetter(record, type(exc).__name__, str(exc)))
    return out


def refuse_unissued(
    decoded: Decoded, records: Iterable[KafkaRecord], authority: EpochAuthority
) -> Decoded:
    """``decoded`` without the requests ``authority`` refuses (now dead letters).

    Args:
        decoded: what :func:`decode_records` made of ``records``.
        records: the partition's records, for the dead letters' original bytes.
        authority: the epochs the controller issued (``core/epochs.py``).
    """
    by_offset = {record.offset: record for record in records}
    out = Decoded(dead_letters=list(decoded.dead_letters))
    for offset, request in decoded.requests:
        try:
            check_issued(request, authority)
        except CollectionManagerError as exc:
            out.dead_letters.append(DeadLetter(by_offset[offset], type(exc).__name__, str(exc)))
        else:
            out.requests.append((offset, request))
    out.dead_letters.sort(key=lambda letter: letter.record.offset)
    return out
