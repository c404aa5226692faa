"""Evaluating filters on rows.

Null semantics are two-valued, kept deliberately simple (and identical to the store's Lua
filter): every comparison (``eq, ne, lt, le, gt, ge, in, prefix``) with a null column value
is *false*; only ``is_null`` is true for it; ``not`` negates whatever its term gave. So
``not (c = 1)`` matches rows where ``c`` is null, unlike SQL's three-valued logic.

Booleans never equal numbers here (Python would say ``True == 1``), and ``1 == 1.0`` for
double columns, as the wire and the store see them.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from collection_manager.core.errors import FilterError
from collection_manager.core.filters.tree import (
    And,
    Cmp,
    Filter,
    In,
    IsNull,
    Not,
    Or,
    Prefix,
    check_shape,
)
from collection_manager.core.specs import Row, Value

Matcher = Callable[[Row], bool]

_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "lt": operator.lt,
    "le": operator.le,
    "gt": operator.gt,
    "ge": operator.ge,
}


def same_value(a: Value, b: Value) -> bool:
    """Equality as filters see it: a boolean equals only a boolean."""
    return a == b and isinstance(a, bool) == isinstance(b, bool)


def value_key(value: Value) -> tuple[bool, Value]:
    """A hashable key with :func:`same_value`'s equality (True is not 1; 1 is 1.0)."""
    return isinstance(value, bool), value


def _position(column: str, positions: Mapping[str, int]) -> int:
    if column not in positions:
        raise FilterError(f"unknown column {column!r}; columns are {', '.join(positions)}")
    return positions[column]


def _cmp(node: Cmp, i: int) -> Matcher:
    lit = node.value
    if node.op == "eq":
        return lambda row: row[i] is not None and same_value(row[i], lit)
    if node.op == "ne":
        return lambda row: row[i] is not None and not same_value(row[i], lit)
    order = _ORDER[node.op]
    return lambda row: row[i] is not None and order(row[i], lit)


def _leaf(node: Cmp | In | Prefix | IsNull, i: int) -> Matcher:
    if isinstance(node, Cmp):
        return _cmp(node, i)
    if isinstance(node, In):
        # A set of value keys: constant time per row, whatever the list's length.
        keys = frozenset(value_key(v) for v in node.values)
        return lambda row: row[i] is not None and value_key(row[i]) in keys
    if isinstance(node, Prefix):
        return _starts_with(i, node.prefix)
    return lambda row: row[i] is None


def _starts_with(i: int, start: str) -> Matcher:
    def match(row: Row) -> bool:
        value = row[i]
        return isinstance(value, str) and value.startswith(start)

    return match


def _build(node: Filter, positions: Mapping[str, int]) -> Matcher:
    if isinstance(node, And):
        terms = [_build(t, positions) for t in node.terms]
        return lambda row: all(term(row) for term in terms)
    if isinstance(node, Or):
        terms = [_build(t, positions) for t in node.terms]
        return lambda row: any(term(row) for term in terms)
    if isinstance(node, Not):
        term = _build(node.term, positions)
        return lambda row: not term(row)
    return _leaf(node, _position(node.column, positions))


def compile_filter(node: Filter, columns: Sequence[str]) -> Matcher:
    """A function deciding whether a row (in ``columns`` order) matches ``node``.

    Compiling once is much cheaper than :func:`evaluate` per row on a large scan. The
    function is local to this process; it never goes on the wire.

    Raises:
        FilterError: for an unknown column or a filter beyond the shape limits.
    """
    check_shape(node)
    matcher = _build(node, {name: i for i, name in enumerate(columns)})

    def matches(row: Row) -> bool:
        try:
            return matcher(row)
        except (TypeError, IndexError) as exc:  # e.g. a string ordered against a long
            raise FilterError(f"filter cannot be evaluated on row {row!r}: {exc}") from exc

    return matches


def evaluate(node: Filter, row: Row, columns: Sequence[str]) -> bool:
    """Whether ``row`` (in ``columns`` order) matches ``node``.

    Raises:
        FilterError: for an unknown column, a filter beyond the shape limits, or literals
            that cannot be compared with the row's values (validate filters first).
    """
    return compile_filter(node, columns)(row)
