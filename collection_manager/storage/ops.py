"""What ``cm_apply`` of the store's library is given: planned operations of one collection.

An operation is one step of the collection's order: merged appends, a delete, or a fence
(from a ``ReplicaRemoved``). It carries the first and last Kafka offset it covers so the
function can skip what a previous run already applied.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from collection_manager.core.planning import SourceUpdates
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.lua_filter import LuaFilter
from collection_manager.storage.rows import encode_row


@dataclasses.dataclass(frozen=True)
class AppendOp:
    """Appends merged between deletes, applied at one time; the fuse decides per part."""

    first_offset: int
    last_offset: int
    parts: Sequence[SourceUpdates]


@dataclasses.dataclass(frozen=True)
class DeleteOp:
    """Retract every row matching a filter, then optionally fence a replica's epochs.

    Attributes:
        index_keys: when set, the candidate rows are those of these index sets
            (``<column>:<value>``) and ``residual`` decides among them; when None, every
            row is a candidate (a scan).
        residual: the filter the candidates must match (None: all of them).
    """

    offset: int
    index_keys: Sequence[str] | None
    residual: LuaFilter | None
    fence: tuple[str, int] | None = None


@dataclasses.dataclass(frozen=True)
class FenceOp:
    """Record that epochs ``<= epoch`` of ``replica_id`` are dead (no time passes)."""

    offset: int
    replica_id: str
    epoch: int


@dataclasses.dataclass(frozen=True)
class RefusedOp:
    """An append refused whole (it would take a multiplicity out of the numeric domain).

    Applying it writes no data and takes no time: it records ``why`` for the consumer to
    dead-letter, and the watermark passes it, so it is refused exactly once.
    """

    offset: int
    why: str


Op = AppendOp | DeleteOp | FenceOp | RefusedOp


# A collection function's arguments: index prefix, log length, payload, its own; then rows
# (Lua counts from 1).
FIRST_ROWS_ARGUMENT = 5


def indexed_positions(spec: CollectionSpec) -> list[tuple[str, int]]:
    """``(name, position)`` of each indexed column, as the library derives index keys."""
    names = spec.column_names
    return [(name, names.index(name)) for name in spec.indexed_columns]


def double_positions(spec: CollectionSpec) -> frozenset[int]:
    """Positions of double columns, whose ints are stored as floats."""
    return frozenset(i for i, column in enumerate(spec.columns) if column.type == "double")


@dataclasses.dataclass(frozen=True)
class FunctionCall:
    """The arguments of one collection function call (``cm_apply``, ``cm_due``, ...).

    ``payload`` is JSON of the operations. The rows of each append part follow it as one
    plain function argument, joined by newlines (canonical JSON never holds a raw newline),
    which the part addresses by position; its diffs are in the payload. Rows nested in the
    JSON would be escaped by Python and unescaped by Lua, and one argument per row
    costs Python more than the rest of an update's preparation.
    """

    payload: str
    rows: list[str]


def _part_json(part: SourceUpdates, doubles: frozenset[int], rows: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "r": part.replica_id,
        "e": part.epoch,
        "n": part.requests,
        "a": FIRST_ROWS_ARGUMENT + len(rows),
        "d": [diff for _, diff in part.updates],
    }
    rows.append("\n".join(encode_row(row, doubles) for row, _ in part.updates))
    if part.valid_until is not None:  # a JSON null would be truthy in Lua
        out["v"] = part.valid_until
    return out


def _op_json(op: Op, doubles: frozenset[int], rows: list[str]) -> dict[str, Any]:
    if isinstance(op, AppendOp):
        parts = [_part_json(p, doubles, rows) for p in op.parts]
        return {"k": "a", "s": op.first_offset, "o": op.last_offset, "p": parts}
    if isinstance(op, FenceOp):
        return {"k": "f", "s": op.offset, "o": op.offset, "fr": op.replica_id, "fe": op.epoch}
    if isinstance(op, RefusedOp):
        return {"k": "x", "s": op.offset, "o": op.offset, "why": op.why}
    out: dict[str, Any] = {"k": "d", "s": op.offset, "o": op.offset}
    if op.index_keys is not None:
        out["x"] = list(op.index_keys)
    if op.residual is not None:
        out["f"] = op.residual
    if op.fence is not None:
        out["fr"], out["fe"] = op.fence
    return out


def function_call(ops: Sequence[Op], spec: CollectionSpec) -> FunctionCall:
    """The arguments of one ``cm_apply`` call: the operations and their rows."""
    doubles = double_positions(spec)
    rows: list[str] = []
    encoded = [_op_json(op, doubles, rows) for op in ops]
    indexed = [list(column) for column in indexed_positions(spec)]
    return FunctionCall(json.dumps({"ic": indexed, "ops": encoded}, separators=(",", ":")), rows)


def _weight(op: Op) -> int:
    return sum(len(p.updates) for p in op.parts) if isinstance(op, AppendOp) else 1


def chunk_ops(ops: Sequence[Op], max_updates: int) -> list[list[Op]]:
    """Splits ``ops`` at operation boundaries into chunks of about ``max_updates`` updates.

    A single operation is never split: atomicity holds per request (and per merged run).
    A delete ends its chunk: the function checks every multiplicity its appends would
    leave before it writes anything, and it need not evaluate deletes to do so.
    """
    chunks: list[list[Op]] = []
    current: list[Op] = []
    weight = 0
    for op in ops:
        if current and (weight + _weight(op) > max_updates or isinstance(current[-1], DeleteOp)):
            chunks.append(current)
            current, weight = [], 0
        current.append(op)
        weight += _weight(op)
    if current:
        chunks.append(current)
    return chunks
