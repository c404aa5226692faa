"""A stable, human-readable rendering of filters, for logs, dead letters and the CLI."""

from __future__ import annotations

import re

from collection_manager.core.filters.tree import And, Cmp, Filter, In, IsNull, Not, Or, Prefix
from collection_manager.core.specs import Value

_SYMBOLS = {"eq": "=", "ne": "!=", "lt": "<", "le": "<=", "gt": ">", "ge": ">="}
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def literal(value: Value) -> str:
    """A literal as SQL would write it: ``'it''s'``, ``NULL``, ``TRUE``, ``3``, ``2.5``."""
    if value is None:
        return "NULL"
    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, str):
        return "'" + value.replace("'", "''") + "'"
    return repr(value)


def column_name(name: str) -> str:
    """A column name, double-quoted unless it is a plain identifier."""
    if _PLAIN_NAME.fullmatch(name):
        return name
    return '"' + name.replace('"', '""') + '"'


def _term(node: Filter) -> str:
    text = describe(node)
    return f"({text})" if isinstance(node, And | Or) and len(node.terms) > 1 else text


def _leaf(node: Cmp | In | Prefix | IsNull) -> str:
    column = column_name(node.column)
    if isinstance(node, Cmp):
        return f"{column} {_SYMBOLS.get(node.op, node.op)} {literal(node.value)}"
    if isinstance(node, In):
        return f"{column} IN ({', '.join(literal(v) for v in node.values)})"
    if isinstance(node, Prefix):
        return f"{column} STARTS WITH {literal(node.prefix)}"
    return f"{column} IS NULL"


def describe(node: Filter) -> str:
    """The filter as one line, e.g. ``replica_id = 'r1' AND worker_id > 3``.

    Compound terms inside ``AND``/``OR`` and every ``NOT`` term are parenthesised, so the text reads
    unambiguously; an empty ``AND`` is ``TRUE`` and an empty ``OR`` is ``FALSE``.
    """
    if isinstance(node, And | Or):
        if not node.terms:
            return "TRUE" if isinstance(node, And) else "FALSE"
        joiner = " AND " if isinstance(node, And) else " OR "
        return joiner.join(_term(t) for t in node.terms)
    if isinstance(node, Not):
        return f"NOT ({describe(node.term)})"
    return _leaf(node)
