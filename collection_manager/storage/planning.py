"""From requests in Kafka offset order to the store operations of each collection.

Pure: the consumer (and the tests) hand it one partition's decoded, validated requests
with their offsets and the collections' applied-offset watermarks; it returns, per
collection, the operations still to apply, with appends merged between deletes.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from collection_manager.core.buckets import BucketPart
from collection_manager.core.filters import Filter, index_lookup
from collection_manager.core.numbers import INT_RANGE
from collection_manager.core.planning import AppendGroup, DeleteStep, plan_groups
from collection_manager.core.requests import Append, Delete, Request, unit_of
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.lua_filter import LuaFilter, to_lua
from collection_manager.storage.ops import AppendOp, DeleteOp, Op, RefusedOp
from collection_manager.storage.rows import index_value

OffsetRequest = tuple[int, Request]


def filter_query(node: Filter, spec: CollectionSpec) -> tuple[list[str] | None, LuaFilter | None]:
    """Index keys and residual answering ``node``, or ``(None, filter)`` for a scan."""
    lookup = index_lookup(node, spec.indexed_columns)
    if lookup is None:
        return None, to_lua(node, spec.column_names)
    keys = [f"{column}:{index_value(value)}" for column, value in lookup.keys]
    residual = None if lookup.residual is None else to_lua(lookup.residual, spec.column_names)
    return keys, residual


def _delete_op(offset: int, request: Delete, spec: CollectionSpec) -> DeleteOp:
    keys, residual = filter_query(request.filter, spec)
    fence = None if request.fence is None else (request.fence.replica_id, request.fence.epoch)
    return DeleteOp(offset, keys, residual, fence, _groups([request]))


def _groups(requests: Iterable[Append | Delete]) -> tuple[str, ...]:
    """``<group>|<parts>`` of each grouped request among ``requests`` (core/buckets.py)."""
    parts: list[BucketPart] = [r.bucket for r in requests if r.bucket and r.bucket.group]
    return tuple(f"{part.group}|{part.parts}" for part in parts)


def collection_ops(
    requests: Sequence[OffsetRequest], spec: CollectionSpec, applied: int
) -> list[Op]:
    """The operations of ``spec``'s storage unit (a collection, or one bucket of one) for
    the requests after offset ``applied``."""
    # Control requests touch no collection: a removal fences through its deletes.
    mine = [(o, r) for o, r in requests if o > applied and unit_of(r) == spec.name]
    offsets = [offset for offset, _ in mine]
    ops: list[Op] = []
    for step in plan_groups([request for _, request in mine]):
        if isinstance(step, AppendGroup):
            merged = [r for _, r in mine[step.first_index : step.last_index + 1]]
            appends = [r for r in merged if isinstance(r, Append)]
            first, last = offsets[step.first_index], offsets[step.last_index]
            ops.append(AppendOp(first, last, step.parts, _groups(appends)))
        elif isinstance(step, DeleteStep):
            ops.append(_delete_op(offsets[step.index], step.request, spec))
    return ops


def plan_ops(
    requests: Sequence[OffsetRequest],
    specs: Mapping[str, CollectionSpec],
    applied: Mapping[str, int],
) -> dict[str, list[Op]]:
    """Per collection of ``specs``, the operations still to apply (empty lists left out).

    Args:
        requests: one partition's requests in offset order, validated against ``specs``.
        specs: the collections to plan for (at least those the requests name).
        applied: per collection, the highest offset of this partition already applied.
    """
    planned = {
        name: collection_ops(requests, spec, applied.get(name, -1)) for name, spec in specs.items()
    }
    return {name: ops for name, ops in planned.items() if ops}


def split_refused(
    op: AppendOp, requests: Sequence[OffsetRequest], spec: CollectionSpec, row: str, value: int
) -> list[Op]:
    """What replaces an append op whose updates would leave the numeric domain.

    A merged op splits into one op per request it merged (each at its own time, as if it
    had never been merged), so that only the request at fault is refused; a single request
    becomes a :class:`RefusedOp` whose reason names the row, the value and the bound.
    """
    if op.first_offset == op.last_offset:
        why = (
            f"append would take the multiplicity of row {row} to {value}, outside the "
            f"supported integer range {INT_RANGE}"
        )
        return [RefusedOp(op.first_offset, why)]
    mine = [
        (offset, request)
        for offset, request in requests
        if op.first_offset <= offset <= op.last_offset
        and isinstance(request, Append)
        and unit_of(request) == spec.name
    ]
    return [
        AppendOp(offset, offset, _alone(request).parts, _groups([request]))
        for offset, request in mine
    ]


def _alone(request: Append) -> AppendGroup:
    [step] = plan_groups([request])
    assert isinstance(step, AppendGroup)
    return step


def without_refused(
    chunk: Sequence[Op],
    index: int,
    row: str,
    value: int,
    requests: Sequence[OffsetRequest],
    spec: CollectionSpec,
) -> list[Op]:
    """``chunk`` with its append at ``index``, which would take ``row`` to ``value``,
    replaced as :func:`split_refused` says."""
    op = chunk[index]
    assert isinstance(op, AppendOp)
    return [*chunk[:index], *split_refused(op, requests, spec, row, value), *chunk[index + 1 :]]
