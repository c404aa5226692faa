"""Writers route by bucket: which requests a write becomes (docs/concepts/buckets.md).

An append becomes one request per bucket its rows lie in; a delete goes to the buckets its
filter pins, or to every bucket. Requests sent to several buckets are the parts of one
group, which readers see whole or not at all. Each request of a bucket goes to that
bucket's partition when the collection has an assignment (:func:`partition_of`), so all
of a bucket's requests, appends and deletes alike, share one partition and its order.
Pure: agents, the embedded API, the controller and raw producers (through
``producers/routing.py``) share it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable

from collection_manager.core.buckets import BucketPart, bucket_of, new_group, rows_by_bucket
from collection_manager.core.filters import And, Cmp, Filter, In
from collection_manager.core.requests import Append, Delete, Request
from collection_manager.core.specs import CollectionSpec


def pinned_buckets(node: Filter, column: str, buckets: int) -> frozenset[int] | None:
    """The buckets a filter's rows can only be in, or None when it pins none.

    ``column = v`` pins ``v``'s bucket, ``column in (...)`` theirs, an ``and`` whatever
    its first pinning term pins. Anything else may match rows of every bucket.
    """
    if isinstance(node, Cmp) and node.op == "eq" and node.column == column:
        return frozenset({bucket_of(node.value, buckets)})
    if isinstance(node, In) and node.column == column:
        return frozenset(bucket_of(value, buckets) for value in node.values)
    if isinstance(node, And):
        for term in node.terms:
            pinned = pinned_buckets(term, column, buckets)
            if pinned is not None:
                return pinned
    return None


def parts_for(buckets: Iterable[int]) -> list[BucketPart]:
    """One part per bucket, in bucket order; grouped when there are several."""
    chosen = sorted(set(buckets))
    if len(chosen) == 1:
        return [BucketPart(chosen[0])]
    group = new_group()
    return [BucketPart(bucket, group, len(chosen)) for bucket in chosen]


def route_append(append: Append, spec: CollectionSpec) -> list[Append]:
    """``append`` as the requests to send: itself for an unbucketed collection, else one
    per bucket its rows lie in (an append of no rows goes to bucket 0)."""
    if spec.buckets == 1:
        return [append]
    rows = [row for row, _ in append.updates]
    indexes = rows_by_bucket(rows, spec.bucket_position, spec.buckets) or {0: []}
    parts = parts_for(indexes)
    return [
        dataclasses.replace(
            append, updates=tuple(append.updates[i] for i in indexes[part.bucket]), bucket=part
        )
        for part in parts
    ]


def route_delete(delete: Delete, spec: CollectionSpec) -> list[Delete]:
    """``delete`` as the requests to send: itself for an unbucketed collection, else one
    per bucket its filter pins, or one per bucket of the collection."""
    if spec.buckets == 1:
        return [delete]
    pinned = pinned_buckets(delete.filter, spec.bucket_column, spec.buckets)
    # An empty IN pins no bucket and matches nothing: one part does it.
    buckets = range(spec.buckets) if pinned is None else (pinned or {0})
    return [dataclasses.replace(delete, bucket=part) for part in parts_for(buckets)]


def partition_of(request: Request, spec: CollectionSpec | None) -> int | None:
    """The partition a routed ``request`` must be produced to: its bucket's, as ``spec``
    (its collection's catalog definition) assigns them; None when its key picks one, as
    for control requests (keyed by replica id), an unbucketed collection's and a bucketed
    one's created before assignments (``core/partitions.py``).

    Raises:
        ValueError: for a request of another collection than ``spec``'s.
    """
    if spec is None or not isinstance(request, Append | Delete) or request.bucket is None:
        return None
    if request.collection != spec.collection:
        raise ValueError(
            f"a request for {request.collection!r} is placed by its own collection's spec, "
            f"not by that of {spec.collection!r}"
        )
    return spec.partition_of(request.bucket.bucket)
