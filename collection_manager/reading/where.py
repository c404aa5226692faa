"""Where terms (``collections query --where``, the HTTP API's ``where``): ``COLUMN<op>VALUE``
parsed into a filter, or one-line errors.

Every error names the term and what would be valid: the syntax, the operators, the columns
with their types, or the type a value must have. ``label`` is how the caller's user wrote
the term's parameter (``--where`` on the command line, ``where`` in a URL), so the error
names it as they typed it.
"""

from __future__ import annotations

import difflib
import math
import re

from collection_manager.core.errors import FilterError
from collection_manager.core.filters import (
    Filter,
    and_,
    eq,
    ge,
    gt,
    is_null,
    le,
    lt,
    ne,
    not_,
    prefix,
)
from collection_manager.core.numbers import INT_RANGE, in_domain
from collection_manager.core.specs import CollectionSpec, Column, Value

# Operator -> meaning, in the order the help lists them.
OPERATORS = {
    "=": "equals",
    "!=": "differs",
    "<": "less than",
    "<=": "at most",
    ">": "greater than",
    ">=": "at least",
    "^=": "starts with (string columns)",
}
_ORDERINGS = {"<": lt, "<=": le, ">": gt, ">=": ge}
_TERM = re.compile(r"(?P<column>[^=!<>^~]*?)\s*(?P<op>[=!<>^~]+)\s*(?P<value>.*)", re.DOTALL)
SYNTAX = "COLUMN<op>VALUE, e.g. replica_id=r1 or worker_id>=2"
# How errors name the parameter unless told: as the command line spells it.
LABEL = "--where"
# Operators people write from other languages, and ours that they meant.
_MISTAKES = {"==": "=", "=<": "<=", "=>": ">=", "<>": "!=", "=!": "!=", "=^": "^=", "~=": "^="}
_EXAMPLES = {"long": "42", "double": "0.5", "boolean": "true", "string": "r1"}


def _type_of(column: Column) -> str:
    return f"{column.type} or null" if column.nullable else column.type


def _columns_text(spec: CollectionSpec) -> str:
    return ", ".join(f"{c.name} ({_type_of(c)})" for c in spec.columns)


def _unknown_column(term: str, name: str, spec: CollectionSpec, label: str) -> FilterError:
    close = difflib.get_close_matches(name, spec.column_names, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return FilterError(
        f"{label} {term!r}: unknown column {name!r}{hint}; "
        f"columns of {spec.name}: {_columns_text(spec)}"
    )


def _bad_operator(term: str, op: str, label: str) -> FilterError:
    meant = _MISTAKES.get(op)
    hint = f" (did you mean {meant!r}?)" if meant else ""
    return FilterError(
        f"{label} {term!r}: unknown operator {op!r}{hint}; operators: {', '.join(OPERATORS)}"
    )


def _number(text: str, column: Column) -> Value:
    if column.type == "long":
        number = int(text)
        if not in_domain(number):
            raise ValueError(f"outside the supported integer range {INT_RANGE}")
        return number
    value = float(text)
    if not math.isfinite(value):
        raise ValueError("not a finite number")
    return value


def literal(term: str, text: str, column: Column, label: str = LABEL) -> Value:
    """``text`` as a value of ``column``'s type.

    Raises:
        FilterError: saying which type (and what form of value) the column expects.
    """
    expected = {
        "long": "an integer (at most 2^53 - 1 in size)",
        "double": "a finite number",
        "boolean": "true or false",
    }.get(column.type)
    if expected is None:
        return text
    if column.type == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
    else:
        try:
            return _number(text, column)
        except ValueError:
            pass
    example = f"{column.name}={_EXAMPLES[column.type]}"
    raise FilterError(
        f"{label} {term!r}: {column.name} is a {column.type} column; "
        f"expected {expected}, e.g. {example}"
    )


def _term_filter(term: str, column: Column, op: str, text: str, label: str) -> Filter:
    if text == "null" and op in ("=", "!="):
        return is_null(column.name) if op == "=" else not_(is_null(column.name))
    if op == "^=":
        if column.type != "string":
            raise FilterError(
                f"{label} {term!r}: ^= (starts with) needs a string column; "
                f"{column.name} is a {column.type} column"
            )
        return prefix(column.name, text)
    if op in _ORDERINGS and text == "null":
        raise FilterError(
            f"{label} {term!r}: {op} cannot compare with null; "
            f"use {column.name}=null or {column.name}!=null"
        )
    if op in _ORDERINGS and column.type == "boolean":
        raise FilterError(
            f"{label} {term!r}: {column.name} is a boolean column; use = or != with true or false"
        )
    value = literal(term, text, column, label)
    if op == "=":
        return eq(column.name, value)
    if op == "!=":
        return ne(column.name, value)
    return _ORDERINGS[op](column.name, value)


def split_term(term: str, label: str = LABEL) -> tuple[str, str, str]:
    """``(column, operator, value)`` of a term, checked before anything connects.

    Raises:
        FilterError: for a term that is no ``COLUMN<op>VALUE``, or an unknown operator.
    """
    match = _TERM.fullmatch(term)
    if match is None or not match["column"].strip():
        raise FilterError(
            f"{label} {term!r}: expected {SYNTAX} (operators: {', '.join(OPERATORS)})"
        )
    name, op, text = match["column"].strip(), match["op"], match["value"]
    if op not in OPERATORS:
        raise _bad_operator(term, op, label)
    return name, op, text


def parse_term(term: str, spec: CollectionSpec, label: str = LABEL) -> Filter:
    """The filter of one ``COLUMN<op>VALUE`` term.

    Raises:
        FilterError: one line naming the term and what is valid: the syntax, a column (all
            listed with their types), an operator (all listed), or the value's type.
    """
    name, op, text = split_term(term, label)
    columns = {c.name: c for c in spec.columns}
    if name not in columns:
        raise _unknown_column(term, name, spec, label)
    return _term_filter(term, columns[name], op, text, label)


def parse_where(terms: list[str], spec: CollectionSpec, label: str = LABEL) -> Filter | None:
    """The filter of where terms (all must hold), or None without terms.

    Raises:
        FilterError: for the first bad term, as :func:`parse_term` says.
    """
    filters = [parse_term(term, spec, label) for term in terms]
    if not filters:
        return None
    return filters[0] if len(filters) == 1 else and_(*filters)
