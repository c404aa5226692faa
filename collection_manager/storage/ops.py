"""What the apply script is given: planned append and delete operations of one collection.

An operation covers one request or, for appends merged between deletes, several; it carries
the first and last Kafka offset it covers so replays can be recognised.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from typing import Any

from collection_manager.storage.rows import encode_row

# A filter for the script: nested lists, see ``matches`` in apply.lua.
LuaFilter = list[Any]


@dataclasses.dataclass(frozen=True)
class AppendOp:
    """Updates from one replica epoch, consolidated (no row twice, no zero diff)."""

    first_offset: int
    last_offset: int
    replica_id: str
    epoch: int
    updates: Sequence[tuple[Sequence[object], int]]


@dataclasses.dataclass(frozen=True)
class DeleteOp:
    """Retract every row matching a filter; optionally fence a replica's epochs.

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


Op = AppendOp | DeleteOp


def _append_json(op: AppendOp, double_columns: frozenset[int]) -> dict[str, Any]:
    updates = [[encode_row(row, double_columns), diff] for row, diff in op.updates]
    return {
        "k": "a",
        "s": op.first_offset,
        "o": op.last_offset,
        "r": op.replica_id,
        "e": op.epoch,
        "u": updates,
    }


def _delete_json(op: DeleteOp) -> dict[str, Any]:
    out: dict[str, Any] = {"k": "d", "s": op.offset, "o": op.offset}
    if op.index_keys is not None:
        out["x"] = list(op.index_keys)
    if op.residual is not None:
        out["f"] = op.residual
    if op.fence is not None:
        out["fr"], out["fe"] = op.fence
    return out


def script_payload(
    ops: Sequence[Op], indexed: Sequence[tuple[str, int]], double_columns: frozenset[int]
) -> str:
    """The JSON argument of one apply-script call."""
    encoded = [
        _append_json(op, double_columns) if isinstance(op, AppendOp) else _delete_json(op)
        for op in ops
    ]
    # An empty Lua table encodes as {} not []: cjson needs at least the shape to decode.
    return json.dumps({"ic": [list(c) for c in indexed], "ops": encoded}, separators=(",", ":"))


def chunk_ops(ops: Sequence[Op], max_updates: int) -> list[list[Op]]:
    """Splits ``ops`` at operation boundaries into chunks of about ``max_updates`` updates.

    A single operation is never split: atomicity holds per request (and per merged run).
    """
    chunks: list[list[Op]] = []
    current: list[Op] = []
    weight = 0
    for op in ops:
        size = len(op.updates) if isinstance(op, AppendOp) else 1
        if current and weight + size > max_updates:
            chunks.append(current)
            current, weight = [], 0
        current.append(op)
        weight += size
    if current:
        chunks.append(current)
    return chunks
