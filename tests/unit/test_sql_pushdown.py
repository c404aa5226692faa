"""Spark's pushed filters in the product's language: pushed only where the answer is Spark's.

Spark keeps a row when its filter is true, and its logic has three values (null for a
comparison with null). A pushed filter is not checked by Spark again, so on every row it
must keep exactly what Spark's three-valued evaluation keeps.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pyspark.sql import datasource as spark

from collection_manager.core.filters import compile_filter, eq, in_, is_null, ne, not_, prefix
from collection_manager.core.specs import CollectionSpec
from collection_manager.sql.changes import starting_after
from collection_manager.sql.options import Connection, OptionError, bounded_int, flag
from collection_manager.sql.pushdown import translate
from collection_manager.sql.schema import spark_schema

SPEC = CollectionSpec(
    "sizes",
    {
        "type": "record",
        "name": "sizes",
        "fields": [
            {"name": "replica_id", "type": ["null", "string"]},
            {"name": "worker_id", "type": "long"},
            {"name": "size", "type": ["null", "double"]},
            {"name": "hydrated", "type": "boolean"},
        ],
    },
    ("replica_id", "worker_id"),
)
COLUMNS = {"replica_id": 0, "worker_id": 1, "size": 2, "hydrated": 3}

strings = st.sampled_from(["", "r", "r1", "r10", "r2", "é", "s"])
rows = st.tuples(
    st.none() | strings,
    st.integers(-3, 3),
    st.none() | st.floats(-3, 3, allow_nan=False, allow_infinity=False),
    st.booleans(),
)


def _literal(column: str) -> st.SearchStrategy[Any]:
    return {
        "replica_id": strings,
        "worker_id": st.integers(-3, 3),
        "size": st.floats(-3, 3, allow_nan=False, allow_infinity=False),
        "hydrated": st.booleans(),
    }[column]


@st.composite
def leaves(draw: st.DrawFn) -> spark.Filter:
    column = draw(st.sampled_from(sorted(COLUMNS)))
    path = (column,)
    kind = draw(st.sampled_from(["cmp", "in", "null", "notnull", "prefix", "ends"]))
    if kind == "cmp":
        make = draw(
            st.sampled_from(
                [
                    spark.EqualTo,
                    spark.GreaterThan,
                    spark.GreaterThanOrEqual,
                    spark.LessThan,
                    spark.LessThanOrEqual,
                ]
            )
        )
        return make(path, draw(_literal(column)))
    if kind == "in":
        values = draw(st.lists(st.none() | _literal(column), max_size=4))
        return spark.In(path, tuple(values))
    if kind == "null":
        return spark.IsNull(path)
    if kind == "notnull":
        return spark.IsNotNull(path)
    text = draw(strings)
    return (
        spark.StringStartsWith(path, text) if kind == "prefix" else spark.StringEndsWith(path, text)
    )


filters = leaves() | leaves().map(spark.Not)


def _spark_value(node: spark.Filter, row: tuple[Any, ...]) -> bool | None:
    """Spark's three-valued answer: True, False or None (null)."""
    if isinstance(node, spark.Not):
        inner = _spark_value(node.child, row)
        return None if inner is None else not inner
    value = row[COLUMNS[node.attribute[0]]]
    if isinstance(node, spark.IsNull):
        return value is None
    if isinstance(node, spark.IsNotNull):
        return value is not None
    if value is None:
        return None
    if isinstance(node, spark.In):
        if value in [v for v in node.value if v is not None]:
            return True
        return None if None in node.value else False
    literal = node.value
    if isinstance(node, spark.StringStartsWith):
        return isinstance(value, str) and value.startswith(literal)
    if isinstance(node, spark.StringEndsWith):
        return isinstance(value, str) and value.endswith(literal)
    if type(value) is not type(literal) and not (
        isinstance(value, int | float) and isinstance(literal, int | float)
    ):
        return None  # Spark would not compare these uncast: it never pushes them
    compare = {
        spark.EqualTo: lambda a, b: a == b,
        spark.GreaterThan: lambda a, b: a > b,
        spark.GreaterThanOrEqual: lambda a, b: a >= b,
        spark.LessThan: lambda a, b: a < b,
        spark.LessThanOrEqual: lambda a, b: a <= b,
    }[type(node)]
    return bool(compare(value, literal))


@settings(max_examples=600, deadline=None)
@given(node=filters, row=rows)
def test_a_pushed_filter_keeps_exactly_the_rows_spark_keeps(
    node: spark.Filter, row: tuple[Any, ...]
) -> None:
    term = translate(node, SPEC)
    if term is None:
        return
    kept_by_spark = _spark_value(node, row) is True
    assert compile_filter(term, SPEC.column_names)(row) == kept_by_spark


@pytest.mark.parametrize(
    ("pushed", "expected"),
    [
        (spark.EqualTo(("replica_id",), "r1"), eq("replica_id", "r1")),
        (spark.Not(spark.EqualTo(("worker_id",), 3)), ne("worker_id", 3)),
        (spark.In(("replica_id",), ("r1", None, "r2")), in_("replica_id", ("r1", "r2"))),
        (spark.IsNotNull(("size",)), not_(is_null("size"))),
        (spark.StringStartsWith(("replica_id",), "r"), prefix("replica_id", "r")),
    ],
)
def test_what_is_pushed(pushed: spark.Filter, expected: Any) -> None:
    assert translate(pushed, SPEC) == expected


@pytest.mark.parametrize(
    "kept",
    [
        spark.StringEndsWith(("replica_id",), "1"),  # the product has no ends-with
        spark.Not(spark.In(("replica_id",), ("r1",))),  # NOT of null is null, not true
        spark.EqualTo(("worker_id",), "3"),  # another type than the column's
        spark.EqualTo(("a", "b"), 1),  # a nested field
        spark.EqualNullSafe(("replica_id",), "r1"),
        spark.In(("replica_id",), (None,)),
    ],
)
def test_what_stays_with_spark(kept: spark.Filter) -> None:
    assert translate(kept, SPEC) is None


def test_options_are_checked_with_their_bounds_named() -> None:
    assert bounded_int({"Partitions": "4"}, "partitions", 1, 64) == 4
    with pytest.raises(OptionError, match="option partitions must be from 1 to 64, not 65"):
        bounded_int({"partitions": "65"}, "partitions", 1, 64)
    with pytest.raises(OptionError, match="must be a whole number, not 'x'"):
        bounded_int({"partitions": "x"}, "partitions", 1, 64)
    with pytest.raises(OptionError, match="must be true or false"):
        flag({"pushdown": "yes"}, "pushdown", True)
    with pytest.raises(OptionError, match=r"no collection given"):
        Connection.of({"redis.url": "redis://127.0.0.1:1"})


def test_starting_time() -> None:
    assert starting_after({}, 17) == 17
    assert starting_after({"startingtime": "earliest"}, 17) == 0
    assert starting_after({"startingTime": "5"}, 17) == 4
    with pytest.raises(OptionError, match="latest, earliest or a time of 1 or more, not '0'"):
        starting_after({"startingTime": "0"}, 17)


def test_a_column_named_like_an_added_one_is_refused_by_name() -> None:
    names = [f.name for f in spark_schema(SPEC, ("time",), ("diff",)).fields]
    assert names == ["time", "replica_id", "worker_id", "size", "hydrated", "diff"]
    with pytest.raises(Exception, match="column named 'worker_id', which the data source adds"):
        spark_schema(SPEC, after=("worker_id",))
