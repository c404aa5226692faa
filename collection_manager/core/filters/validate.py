"""Checking a filter against a collection's schema before it is accepted."""

from __future__ import annotations

from collections.abc import Sequence

from collection_manager.core.errors import FilterError
from collection_manager.core.filters.tree import (
    CMP_OPS,
    ORDER_OPS,
    And,
    Cmp,
    Filter,
    In,
    IsNull,
    Not,
    Or,
    Prefix,
    check_shape,
    walk,
)
from collection_manager.core.specs import CollectionSpec, Column, Value, value_problem


def _column(name: str, columns: dict[str, Column]) -> Column:
    if name not in columns:
        raise FilterError(f"unknown column {name!r}; columns are {', '.join(columns)}")
    return columns[name]


def _literal(value: Value, column: Column, what: str) -> None:
    if value is None:
        raise FilterError(
            f"{what} on {column.name!r} with null never matches; use is_null({column.name!r})"
        )
    # The literal must fit the column as a non-null value would.
    problem = value_problem(value, Column(column.name, column.type))
    if problem is not None:
        raise FilterError(f"{what} literal does not fit: {problem}")


def _check_leaf(node: Cmp | In | Prefix | IsNull, columns: dict[str, Column]) -> None:
    column = _column(node.column, columns)
    if isinstance(node, Cmp):
        if node.op not in CMP_OPS:
            raise FilterError(f"unknown comparison {node.op!r}; use one of {', '.join(CMP_OPS)}")
        if node.op in ORDER_OPS and column.type == "boolean":
            raise FilterError(f"{node.op} on boolean column {column.name!r} is not allowed")
        _literal(node.value, column, node.op)
    elif isinstance(node, In):
        if not node.values:
            raise FilterError(f"in on {column.name!r} has no values")
        for value in node.values:
            _literal(value, column, "in")
    elif isinstance(node, Prefix):
        if column.type != "string":
            raise FilterError(f"prefix needs a string column; {column.name!r} is {column.type}")
        if not isinstance(node.prefix, str):
            raise FilterError(f"prefix on {column.name!r} needs a string, got {node.prefix!r}")


def _check_node(node: Filter, columns: dict[str, Column]) -> None:
    if isinstance(node, And | Or):
        if not node.terms:
            kind = "and" if isinstance(node, And) else "or"
            raise FilterError(f"{kind} needs at least one term")
    elif isinstance(node, Cmp | In | Prefix | IsNull):
        _check_leaf(node, columns)
    elif not isinstance(node, Not):
        raise FilterError(f"not a filter node: {node!r}")


def validate(node: Filter, spec: CollectionSpec | Sequence[Column]) -> None:
    """Checks that ``node`` is a well-formed filter over the collection's columns.

    Args:
        node: the filter.
        spec: the collection, or just its columns.

    Raises:
        FilterError: naming the problem: an unknown column, a literal whose type does not
            fit its column (or is null), an ordering on a boolean column, a prefix on a
            non-string column, an empty ``in``/``and``/``or``, nesting deeper than
            ``MAX_DEPTH`` or more than ``MAX_NODES`` nodes.
    """
    columns = spec.columns if isinstance(spec, CollectionSpec) else tuple(spec)
    by_name = {c.name: c for c in columns}
    try:
        check_shape(node)
        for current, _ in walk(node):
            _check_node(current, by_name)
    except FilterError as exc:
        if isinstance(spec, CollectionSpec):
            exc.with_context(collection=spec.name)
        raise
