"""Buckets: one collection spread over several ordering points (docs/concepts/buckets.md).

A collection of ``N > 1`` buckets keeps each bucket as a storage *unit* of its own: its
own Redis hash tag (so buckets spread over a Redis Cluster's shards), its own Kafka key
``<collection>#<bucket>`` (so buckets spread over partitions), its own times, watermarks,
change log and fences. A row lives in the bucket of its *bucket column*'s value
(:func:`bucket_of`). A collection of one bucket is one unit named like the collection:
today's keys, wire format and behaviour.

A request that spans buckets is sent as one request per bucket, each a *part* of one
*group* (:class:`BucketPart`): an append whose rows lie in several buckets, a delete whose
filter pins no single bucket (``core/routing.py``). Readers see a group whole or not at
all (``core/cut.py``).

Pure: writers, the consumer and readers share these rules.
"""

from __future__ import annotations

import dataclasses
import uuid
import zlib
from collections.abc import Sequence

from collection_manager.core.errors import SchemaError

# The most buckets a collection may have. A reader of the whole collection reads every
# bucket (a few calls each) and a fanned-out delete is one request per bucket, so the
# bound keeps both small; 64 buckets of one collection already take 64 Redis shards.
MAX_BUCKETS = 64
# The column rows are bucketed by unless the collection names another.
DEFAULT_BUCKET_COLUMN = "replica_id"
# Between a collection's name and its bucket in a unit's name and Kafka key. Outside the
# name rule's characters (core/names.py), so a unit name never equals a collection name.
SEPARATOR = "#"


@dataclasses.dataclass(frozen=True)
class BucketPart:
    """Which bucket a request is for, and the group it is a part of.

    Attributes:
        bucket: the bucket, ``0 <= bucket < N``.
        group: an id shared by every part of a request sent to several buckets (None:
            the request is whole in this bucket).
        parts: how many parts the group has (1 without a group).
    """

    bucket: int
    group: str | None = None
    parts: int = 1


def bucket_of(value: object, buckets: int) -> int:
    """The bucket of a row whose bucket column holds ``value``: CRC-32 of its text mod N.

    The text is the value's as the index keys write it (a string as is, a long in decimal),
    so every writer (in any language) and the consumer agree; ``zlib.crc32`` is IEEE CRC-32.
    """
    if buckets == 1:
        return 0
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise SchemaError(f"a bucket column holds strings or longs, not {value!r}")
    text = value if isinstance(value, str) else str(value)
    return zlib.crc32(text.encode("utf-8")) % buckets


def unit_name(collection: str, bucket: int | None) -> str:
    """The storage unit (and Kafka key) of ``collection``'s ``bucket`` (None: unbucketed)."""
    return collection if bucket is None else f"{collection}{SEPARATOR}{bucket}"


def unit_names(collection: str, buckets: int) -> list[str]:
    """The storage units of a collection of ``buckets`` buckets: itself, or each bucket."""
    if buckets <= 1:
        return [collection]
    return [unit_name(collection, bucket) for bucket in range(buckets)]


def bucket_key(collection: str, bucket: int) -> str:
    """The Kafka key of every request for ``bucket`` of ``collection`` (the key rule).

    All of a bucket's requests share it, so they share a partition and keep their order.
    """
    return unit_name(collection, bucket)


def split_unit(unit: str) -> tuple[str, int | None]:
    """``(collection, bucket)`` of a unit name; bucket None for an unbucketed collection."""
    collection, separator, bucket = unit.partition(SEPARATOR)
    return (collection, int(bucket)) if separator else (collection, None)


def new_group() -> str:
    """A fresh id for the parts of one request sent to several buckets."""
    return uuid.uuid4().hex


def rows_by_bucket(
    rows: Sequence[Sequence[object]], position: int, buckets: int
) -> dict[int, list[int]]:
    """Indexes of ``rows`` by the bucket of their value at ``position``, buckets in order."""
    out: dict[int, list[int]] = {}
    for index, row in enumerate(rows):
        out.setdefault(bucket_of(row[position], buckets), []).append(index)
    return dict(sorted(out.items()))
