"""Where each collection stands, as the answers every reader gives
(``collection_manager/answers``): the listing's :class:`Collection` and the
:class:`CollectionDetail` of ``collections show`` and ``/api/v1/collections/{name}``."""

from __future__ import annotations

import typing
from collections.abc import Sequence

from collection_manager.answers.models import (
    Collection,
    CollectionDetail,
    CollectionList,
    Column,
    ColumnType,
    Ttl,
)
from collection_manager.core.specs import CollectionSpec
from collection_manager.reading.status import CollectionInfo


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
