"""Spark's pushed filters as the product's filter language, where the answer is the same.

Spark hands a reader the conjuncts of a query's filter; each one turned into a product
filter is answered by Redis (from an index when it names an indexed column) and Spark does
not check it again, so a pushed filter must keep exactly the rows Spark would keep. Spark's
logic has three values (a comparison with null is null, and NOT null is null: the row goes);
the product's has two (a comparison with null is false). They agree on comparisons, ``IN``,
starts-with and null tests; ``NOT`` is pushed only where it keeps agreeing (``NOT a = v`` as
``a != v``, ``NOT a IS NULL``). Everything else stays with Spark.
"""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import datasource as spark

from collection_manager.core.errors import FilterError
from collection_manager.core.filters import (
    Filter,
    eq,
    ge,
    gt,
    in_,
    is_null,
    le,
    lt,
    ne,
    not_,
    prefix,
    validate,
)
from collection_manager.core.specs import CollectionSpec, Value

_COMPARISONS = {
    spark.EqualTo: eq,
    spark.GreaterThan: gt,
    spark.GreaterThanOrEqual: ge,
    spark.LessThan: lt,
    spark.LessThanOrEqual: le,
}


def translate(pushed: spark.Filter, spec: CollectionSpec) -> Filter | None:
    """The product filter keeping exactly the rows Spark's ``pushed`` keeps, or None."""
    term = _term(pushed)
    if term is None:
        return None
    try:
        validate(term, spec)  # a literal of another type than its column's stays with Spark
    except FilterError:
        return None
    return term


def _column(attribute: Sequence[str]) -> str | None:
    return attribute[0] if len(attribute) == 1 else None  # nested fields: none here


def _term(pushed: spark.Filter) -> Filter | None:
    if isinstance(pushed, spark.Not):
        child = pushed.child
        if isinstance(child, spark.EqualTo) and (column := _column(child.attribute)):
            return None if child.value is None else ne(column, child.value)
        if isinstance(child, spark.IsNull) and (column := _column(child.attribute)):
            return not_(is_null(column))
        return None
    if isinstance(pushed, spark.IsNotNull) and (column := _column(pushed.attribute)):
        return not_(is_null(column))
    if isinstance(pushed, spark.IsNull) and (column := _column(pushed.attribute)):
        return is_null(column)
    column = _column(getattr(pushed, "attribute", ()))
    if column is None:
        return None
    make = _COMPARISONS.get(type(pushed))
    if make is not None:
        value: Value = pushed.value  # type: ignore[attr-defined]
        return None if value is None else make(column, value)
    if isinstance(pushed, spark.In):
        # `a IN (1, NULL)` is null, never true, for a != 1: leaving out the null keeps it so.
        values = [v for v in pushed.value if v is not None]
        return in_(column, values) if values else None
    if isinstance(pushed, spark.StringStartsWith):
        return prefix(column, pushed.value)
    return None
