"""Where each collection stands: read from the store (:class:`CollectionInfo`), and as
the answers every reader gives (``collection_manager/answers``): the listing's
:class:`Collection` and the :class:`CollectionDetail` of ``collections show`` and
``/api/v1/collections/{name}``."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Sequence

from collection_manager.answers.models import (
    BucketRows,
    Collection,
    CollectionDetail,
    CollectionList,
    Column,
    ColumnType,
    Ttl,
)
from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.store import RedisStore


@dataclasses.dataclass(frozen=True)
class CollectionInfo:
    """Where a collection stands: distinct rows, latest readable time, apply counters, and
    how many rows have a TTL and when the next of them expires (ms; None: no such row).

    A bucketed collection's figures are its buckets' sums (its time: the sum of theirs,
    as its cut's total), and ``buckets`` holds each bucket's; empty when unbucketed.
    """

    spec: CollectionSpec
    rows: int
    time: int
    counters: dict[str, int]
    ttl_rows: int = 0
    next_expiry: int | None = None
    buckets: tuple[BucketRows, ...] = ()


def collection_info(store: RedisStore, name: str) -> CollectionInfo:
    """Reads ``name``'s size, time and counters (every counter present, 0 when never set),
    unit by unit: the collection, or each of its buckets (at most ``MAX_BUCKETS``)."""
    spec = store.spec(name)
    counters = dict.fromkeys(SHOWN_COUNTERS, 0)
    ttl_rows, expiries, buckets = 0, [], []
    for unit in spec.units():
        rows, time = store.size(unit.name)
        stats = store.stats(unit.name)
        for counter in SHOWN_COUNTERS:
            counters[counter] += stats.get(counter, 0)
        unit_ttl_rows, next_expiry = store.ttl_summary(unit.name)
        ttl_rows += unit_ttl_rows
        expiries += [] if next_expiry is None else [next_expiry]
        if unit.bucket is not None:
            buckets.append(BucketRows(unit.bucket, rows, time))
    rows = sum(b.rows for b in buckets) if buckets else rows
    time = sum(b.time for b in buckets) if buckets else time
    next_expiry = min(expiries, default=None)
    return CollectionInfo(spec, rows, time, counters, ttl_rows, next_expiry, tuple(buckets))


def collection_infos(store: RedisStore) -> list[CollectionInfo]:
    """Every collection's info; one dropped between the listing and its reads is left out
    (a listing beside a running drop must not fail)."""
    infos = []
    for name in store.collections():
        try:
            infos.append(collection_info(store, name))
        except UnknownCollectionError:
            continue
    return infos


def columns_of(spec: CollectionSpec) -> tuple[Column, ...]:
    """Each column with its type, nullability and whether it is indexed."""
    indexed = set(spec.indexed_columns)
    return tuple(
        Column(c.name, typing.cast(ColumnType, c.type), c.nullable, c.name in indexed)
        for c in spec.columns
    )


def collection_of(info: CollectionInfo) -> Collection:
    """What the listing shows of a collection (a bucketed one's rows and time: its
    buckets' sums)."""
    spec = info.spec
    return Collection(
        spec.name,
        info.rows,
        info.time,
        columns_of(spec),
        tuple(spec.indexed_columns),
        spec.buckets,
        spec.bucket_column if spec.buckets > 1 else None,
    )


def collection_list(infos: Sequence[CollectionInfo]) -> CollectionList:
    return CollectionList(tuple(collection_of(info) for info in infos))


def detail_of(info: CollectionInfo) -> CollectionDetail:
    """The listing's fields and the counters of what was applied, the rows with a TTL and
    the next expiry, the row schema, each bucket's rows and time (empty: unbucketed) and
    partition (null: placed by their keys' hash)."""
    listed = collection_of(info)
    return CollectionDetail(
        **{name: getattr(listed, name) for name in Collection.__dataclass_fields__},
        counters=dict(info.counters),
        ttl=Ttl(info.ttl_rows, info.next_expiry),
        row_schema=dict(info.spec.row_schema),
        bucket_rows=info.buckets,
        partitioning=info.spec.partitioning,
    )
