"""What ``cm_apply`` of the store's library is given: planned operations of one collection.

An operation is one step of the collection's order: merged appends, a delete (which may
fence a replica's epochs), or a refused append. It carries the first and last Kafka offset
it covers so the function can skip what a previous run already applied.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from collection_manager.core.planning import SourceUpdates
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.lua_filter import LuaFilter
from collection_manager.storage.rows import encode_row, index_value


@dataclasses.dataclass(frozen=True)
class AppendOp:
    """Appends merged between deletes, applied at one time; the fuse decides per part."""

    first_offset: int
    last_offset: int
    parts: Sequence[SourceUpdates]
    groups: Sequence[str] = ()  # "<group>|<parts>" of grouped requests among them


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
    groups: Sequence[str] = ()  # "<group>|<parts>" when it is a part of a grouped request


@dataclasses.dataclass(frozen=True)
class RefusedOp:
    """An append refused whole (it would take a multiplicity out of the numeric domain).

    Applying it writes no data and takes no time: it records ``why`` for the consumer to
    dead-letter, and the watermark passes it, so it is refused exactly once.
    """

    offset: int
    why: str


Op = AppendOp | DeleteOp | RefusedOp


# A collection function's arguments: index prefix, log length, payload, its own; then the
# texts (Lua counts from 1).
FIRST_TEXT_ARGUMENT = 5


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

    ``payload`` is JSON of the operations. ``texts`` follow it as plain function arguments,
    which operations address by position: the rows of each append part, joined by newlines
    (canonical JSON never holds a raw newline; its diffs are in the payload), and the query
    of each delete. Rows nested in the payload would be escaped by Python and unescaped by
    Lua, and one argument per row costs Python more than the rest of an update's
    preparation. A delete's query is kept apart so that Lua can store it verbatim when the
    delete takes several calls (cjson would write its numbers with 14 significant digits).
    """

    payload: str
    texts: list[str]


@dataclasses.dataclass(frozen=True)
class _CallShape:
    """What encoding a call's operations needs of its collection's spec."""

    doubles: frozenset[int]
    indexed: list[tuple[str, int]]


def shared_index_keys(
    rows: Sequence[Sequence[object]], indexed: Sequence[tuple[str, int]]
) -> list[str] | None:
    """The index keys (``<column>:<value>``) of every row, when all rows have the same ones.

    A replica's append usually does (its rows share their ``replica_id``): the library is
    then given them once and need not decode each row to derive them. None otherwise.
    """
    keys = []
    for name, position in indexed:
        values = {index_value(row[position]) for row in rows}
        if len(values) != 1:
            return None
        value = values.pop()
        if value is not None:
            keys.append(f"{name}:{value}")
    return keys


def _part_json(part: SourceUpdates, call: _CallShape, texts: list[str]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "r": part.replica_id,
        "e": part.epoch,
        "n": part.requests,
        "a": FIRST_TEXT_ARGUMENT + len(texts),
        "d": [diff for _, diff in part.updates],
    }
    texts.append("\n".join(encode_row(row, call.doubles) for row, _ in part.updates))
    keys = shared_index_keys([row for row, _ in part.updates], call.indexed)
    if keys is not None:
        out["x"] = keys
    if part.valid_until is not None:  # a JSON null would be truthy in Lua
        out["v"] = part.valid_until
    if part.ttl_ms is not None:
        out["t"] = part.ttl_ms
    return out


def _op_json(op: Op, call: _CallShape, texts: list[str]) -> dict[str, Any]:
    if isinstance(op, AppendOp):
        parts = [_part_json(p, call, texts) for p in op.parts]
        appended: dict[str, Any] = {"k": "a", "s": op.first_offset, "o": op.last_offset}
        appended["p"] = parts
        if op.groups:
            appended["g"] = list(op.groups)
        return appended
    if isinstance(op, RefusedOp):
        return {"k": "x", "s": op.offset, "o": op.offset, "why": op.why}
    out: dict[str, Any] = {"k": "d", "s": op.offset, "o": op.offset}
    out["q"] = FIRST_TEXT_ARGUMENT + len(texts)
    texts.append(query_json(op.index_keys, op.residual))
    if op.fence is not None:
        out["fr"], out["fe"] = op.fence
    if op.groups:
        out["g"] = list(op.groups)
    return out


def query_json(index_keys: Sequence[str] | None, residual: LuaFilter | None) -> str:
    """JSON of the rows a delete or a read matches: index keys ``x``, residual ``f``."""
    query: dict[str, Any] = {}
    if index_keys is not None:
        query["x"] = list(index_keys)
    if residual is not None:
        query["f"] = residual
    return json.dumps(query, separators=(",", ":"))


def function_call(
    ops: Sequence[Op], spec: CollectionSpec, delete_step_rows: int = 0, now_ms: int = 0
) -> FunctionCall:
    """The arguments of one ``cm_apply`` call: the operations and their texts.

    ``delete_step_rows``: a delete that may touch more rows than this is done in steps
    (``cm_continue``); 0 where the call applies no delete. ``now_ms``: the consumer's
    clock, from which the rows of appends with a TTL expire.
    """
    call = _CallShape(double_positions(spec), indexed_positions(spec))
    texts: list[str] = []
    encoded = [_op_json(op, call, texts) for op in ops]
    indexed = [list(column) for column in call.indexed]
    payload = {"ic": indexed, "ops": encoded, "ds": delete_step_rows, "now": now_ms}
    return FunctionCall(json.dumps(payload, separators=(",", ":")), texts)


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
