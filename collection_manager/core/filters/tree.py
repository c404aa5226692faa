"""Filters as plain data: a small predicate tree over column names and literals.

Filters travel on the wire inside ``Delete`` requests, so they are data, never code:
frozen dataclasses here, a flat list of Avro records on the wire (see ``schemas.codec``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator
from typing import Literal

from collection_manager.core.errors import FilterError
from collection_manager.core.specs import Value

CmpOp = Literal["eq", "ne", "lt", "le", "gt", "ge"]
CMP_OPS: tuple[CmpOp, ...] = ("eq", "ne", "lt", "le", "gt", "ge")
ORDER_OPS = frozenset({"lt", "le", "gt", "ge"})

# Limits on filters from the wire: evaluation recurses, and a filter is checked against
# every candidate row, so neither may grow without bound. MAX_VALUES bounds the literals of
# all nodes together (an `in` list counts each value): planning and evaluation are linear
# in them, and a delete's whole plan travels in one script call.
MAX_DEPTH = 32
MAX_NODES = 1000
MAX_VALUES = 10_000


@dataclasses.dataclass(frozen=True)
class Cmp:
    """``column <op> value`` for op in eq, ne, lt, le, gt, ge."""

    op: CmpOp
    column: str
    value: Value


@dataclasses.dataclass(frozen=True)
class In:
    """``column`` equals one of ``values``."""

    column: str
    values: tuple[Value, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "values", tuple(self.values))


@dataclasses.dataclass(frozen=True)
class Prefix:
    """``column`` (a string) starts with ``prefix``."""

    column: str
    prefix: str


@dataclasses.dataclass(frozen=True)
class IsNull:
    """``column`` is null."""

    column: str


@dataclasses.dataclass(frozen=True)
class And:
    """Every term matches."""

    terms: tuple[Filter, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", tuple(self.terms))


@dataclasses.dataclass(frozen=True)
class Or:
    """At least one term matches."""

    terms: tuple[Filter, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "terms", tuple(self.terms))


@dataclasses.dataclass(frozen=True)
class Not:
    """The term does not match."""

    term: Filter


Filter = Cmp | In | Prefix | IsNull | And | Or | Not
Leaf = Cmp | In | Prefix | IsNull


def eq(column: str, value: Value) -> Cmp:
    """``column = value``."""
    return Cmp("eq", column, value)


def ne(column: str, value: Value) -> Cmp:
    """``column != value`` (false where ``column`` is null)."""
    return Cmp("ne", column, value)


def lt(column: str, value: Value) -> Cmp:
    """``column < value``."""
    return Cmp("lt", column, value)


def le(column: str, value: Value) -> Cmp:
    """``column <= value``."""
    return Cmp("le", column, value)


def gt(column: str, value: Value) -> Cmp:
    """``column > value``."""
    return Cmp("gt", column, value)


def ge(column: str, value: Value) -> Cmp:
    """``column >= value``."""
    return Cmp("ge", column, value)


def in_(column: str, values: Iterable[Value]) -> In:
    """``column IN (values...)``."""
    return In(column, tuple(values))


def prefix(column: str, start: str) -> Prefix:
    """``column`` starts with ``start``."""
    return Prefix(column, start)


def is_null(column: str) -> IsNull:
    """``column IS NULL``."""
    return IsNull(column)


def and_(*terms: Filter) -> And:
    """All of ``terms``."""
    return And(terms)


def or_(*terms: Filter) -> Or:
    """Any of ``terms``."""
    return Or(terms)


def not_(term: Filter) -> Not:
    """The negation of ``term``."""
    return Not(term)


def children(node: Filter) -> tuple[Filter, ...]:
    """The direct sub-filters of ``node`` (none for a leaf)."""
    if isinstance(node, And | Or):
        return node.terms
    if isinstance(node, Not):
        return (node.term,)
    return ()


def walk(node: Filter) -> Iterator[tuple[Filter, int]]:
    """Every node with its depth (the root has depth 1), pre-order, without recursion."""
    stack = [(node, 1)]
    while stack:
        current, depth = stack.pop()
        yield current, depth
        stack.extend((child, depth + 1) for child in reversed(children(current)))


def shape(node: Filter) -> tuple[int, int]:
    """``(depth, number of nodes)`` of a filter, computed without recursion."""
    depth = size = 0
    for _, level in walk(node):
        size += 1
        depth = max(depth, level)
    return depth, size


def check_shape(node: Filter) -> None:
    """Checks the depth and size limits, stopping as soon as one is exceeded.

    Raises:
        FilterError: when the filter is deeper than ``MAX_DEPTH``, has more than
            ``MAX_NODES`` nodes, or more than ``MAX_VALUES`` literal values.
    """
    values = 0
    for size, (current, depth) in enumerate(walk(node), start=1):
        if depth > MAX_DEPTH:
            raise FilterError(f"filter is nested deeper than {MAX_DEPTH} levels")
        if size > MAX_NODES:
            raise FilterError(f"filter has more than {MAX_NODES} nodes")
        values += len(current.values) if isinstance(current, In) else 1
        if values > MAX_VALUES:
            raise FilterError(
                f"filter has more than {MAX_VALUES} values (each value of an `in` list counts)"
            )
