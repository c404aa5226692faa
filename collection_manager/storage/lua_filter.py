"""Filters in the form the store's Lua library evaluates (see filter.lua).

The tree becomes nested lists with column *positions* instead of names, e.g.
``and_(eq("replica_id", "r1"), gt("worker_id", 3))`` -> ``["and", ["eq", 0, "r1"],
["gt", 1, 3]]``. Semantics are those of ``collection_manager.core.filters.evaluate``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collection_manager.core.filters import And, Cmp, Filter, In, IsNull, Not, Or, Prefix

LuaFilter = list[Any]


def to_lua(node: Filter, columns: Sequence[str]) -> LuaFilter:
    """The Lua form of a filter over rows with ``columns`` (a validated filter)."""
    if isinstance(node, And | Or):
        return ["and" if isinstance(node, And) else "or", *(to_lua(t, columns) for t in node.terms)]
    if isinstance(node, Not):
        return ["not", to_lua(node.term, columns)]
    position = columns.index(node.column)
    if isinstance(node, Cmp):
        return [node.op, position, node.value]
    if isinstance(node, In):
        return ["in", position, list(node.values)]
    if isinstance(node, Prefix):
        return ["prefix", position, node.prefix]
    assert isinstance(node, IsNull)
    return ["is_null", position]
