"""Answering a filter from secondary indexes instead of a scan (docs/concepts/deletes.md).

An index on column ``c`` maps each non-null value ``v`` to the rows with ``c = v``. A
lookup names the index entries (``(column, value)`` keys) whose union holds every matching
row, and a residual filter that picks the matching rows out of that union, so that

    {rows in the union of the keys' entries that match residual} == {rows matching filter}

exactly. A filter that cannot be answered this way gets ``None``: scan the collection.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from collection_manager.core.filters.tree import And, Cmp, Filter, In, Or
from collection_manager.core.specs import Value

IndexKey = tuple[str, Value]


@dataclasses.dataclass(frozen=True)
class IndexLookup:
    """Index entries that answer a filter.

    Attributes:
        keys: distinct ``(column, value)`` index entries; the candidates are the union of
            their rows.
        residual: the filter each candidate must still match, or None when every
            candidate matches.
    """

    keys: tuple[IndexKey, ...]
    residual: Filter | None = None


def _distinct(keys: Iterable[IndexKey]) -> tuple[IndexKey, ...]:
    # Indexable values are ints and strings (never booleans), where equality is plain
    # equality, so a dict keeps the first of each in order, in linear time.
    return tuple(dict.fromkeys(keys))


def _indexable(value: Value) -> bool:
    # The store indexes neither nulls nor booleans (and a double key would never match
    # the long or string values of an indexed column).
    return isinstance(value, int | str) and not isinstance(value, bool)


def _leaf_lookup(node: Cmp | In, indexed: Sequence[str]) -> IndexLookup | None:
    if node.column not in indexed:
        return None
    values = (node.value,) if isinstance(node, Cmp) else node.values
    if not all(_indexable(v) for v in values):
        return None
    return IndexLookup(_distinct((node.column, v) for v in values))


def _and_lookup(node: And, indexed: Sequence[str]) -> IndexLookup | None:
    for i, term in enumerate(node.terms):
        lookup = index_lookup(term, indexed)
        if lookup is None:
            continue
        rest = node.terms[:i] + node.terms[i + 1 :]
        residuals = ((lookup.residual,) if lookup.residual is not None else ()) + rest
        if not residuals:
            return IndexLookup(lookup.keys)
        return IndexLookup(lookup.keys, residuals[0] if len(residuals) == 1 else And(residuals))
    return None


def _or_lookup(node: Or, indexed: Sequence[str]) -> IndexLookup | None:
    lookups = [index_lookup(term, indexed) for term in node.terms]
    keys: list[IndexKey] = []
    for lookup in lookups:
        if lookup is None:
            return None
        keys.extend(lookup.keys)
    # Each term's matches lie within its own keys, so within the union; a candidate found
    # through one term's keys may still need another term's residual, hence the whole Or.
    exact = all(lookup.residual is None for lookup in lookups if lookup is not None)
    return IndexLookup(_distinct(keys), None if exact else node)


def index_lookup(node: Filter, indexed_columns: Sequence[str]) -> IndexLookup | None:
    """The index entries answering ``node`` exactly, or None when a scan is needed.

    ``eq`` and ``in`` on an indexed column are answered by their entries; an ``and`` by
    the first of its terms that has a lookup, with the other terms as residual; an ``or``
    when every term has a lookup, by the union. ``ne``, orderings, ``prefix``, ``is_null``
    and ``not`` need a scan.

    Args:
        node: a validated filter.
        indexed_columns: the collection's indexed columns.
    """
    if (isinstance(node, Cmp) and node.op == "eq") or isinstance(node, In):
        return _leaf_lookup(node, indexed_columns)
    if isinstance(node, And):
        return _and_lookup(node, indexed_columns)
    if isinstance(node, Or) and node.terms:
        return _or_lookup(node, indexed_columns)
    return None
