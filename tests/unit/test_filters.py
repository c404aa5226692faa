"""The filter language: validation, evaluation, description and index lookups."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.errors import FilterError
from collection_manager.core.filters import (
    MAX_DEPTH,
    MAX_NODES,
    MAX_VALUES,
    And,
    Cmp,
    Filter,
    In,
    IndexLookup,
    Not,
    Or,
    and_,
    compile_filter,
    describe,
    eq,
    evaluate,
    ge,
    gt,
    in_,
    index_lookup,
    is_null,
    le,
    lt,
    ne,
    not_,
    or_,
    prefix,
    shape,
    validate,
)
from collection_manager.core.specs import Row
from tests.unit.strategies import FRONTIERS, HYDRATION, model_rows, valid_filters

COLUMNS = FRONTIERS.column_names  # replica_id, export_id, worker_id, frontier (nullable)
ROW = ("r1", "ab", 2, None)


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (eq("replica_id", "r1"), True),
        (ne("replica_id", "r1"), False),
        (lt("worker_id", 3), True),
        (le("worker_id", 2), True),
        (gt("worker_id", 2), False),
        (ge("worker_id", 2), True),
        (in_("export_id", ["a", "ab"]), True),
        (prefix("export_id", "a"), True),
        (prefix("export_id", "b"), False),
        (is_null("frontier"), True),
        (and_(eq("replica_id", "r1"), gt("worker_id", 5)), False),
        (or_(eq("replica_id", "r2"), gt("worker_id", 1)), True),
        (not_(eq("replica_id", "r1")), False),
    ],
)
def test_evaluate(node: Filter, expected: bool) -> None:
    assert evaluate(node, ROW, COLUMNS) is expected


@pytest.mark.parametrize(
    "node",
    [
        eq("frontier", 1),
        ne("frontier", 1),
        lt("frontier", 1),
        in_("frontier", [1]),
        ge("frontier", 0),
    ],
)
def test_comparisons_with_null_are_false_and_not_negates_them(node: Filter) -> None:
    assert evaluate(node, ROW, COLUMNS) is False
    assert evaluate(not_(node), ROW, COLUMNS) is True


def test_prefix_of_null_is_false() -> None:
    assert evaluate(prefix("export_id", ""), ("r1", None, 0, 0), COLUMNS) is False


def test_booleans_are_not_numbers() -> None:
    columns = ["flag"]
    assert evaluate(eq("flag", 1), (True,), columns) is False
    assert evaluate(in_("flag", [1, 0]), (False,), columns) is False
    assert evaluate(eq("flag", True), (True,), columns) is True
    assert evaluate(eq("x", 1.0), (1,), ["x"]) is True


def test_evaluate_refuses_unknown_columns_and_incomparable_values() -> None:
    with pytest.raises(FilterError, match="unknown column 'nope'"):
        evaluate(eq("nope", 1), ROW, COLUMNS)
    with pytest.raises(FilterError, match="cannot be evaluated"):
        evaluate(lt("worker_id", "x"), ROW, COLUMNS)


@pytest.mark.parametrize(
    ("node", "message"),
    [
        (eq("nope", 1), "unknown column 'nope'"),
        (eq("worker_id", "3"), "'worker_id' expects long"),
        (eq("worker_id", True), "'worker_id' expects long"),
        (eq("replica_id", None), "use is_null"),
        (in_("replica_id", []), "has no values"),
        (in_("replica_id", ["a", 1]), "expects string"),
        (prefix("worker_id", "1"), "prefix needs a string column"),
        (lt("hydrated", True), "lt on boolean column"),
        (And(()), "and needs at least one term"),
        (Or(()), "or needs at least one term"),
        (Cmp("like", "replica_id", "r"), "unknown comparison 'like'"),  # type: ignore[arg-type]
        (eq("load", float("nan")), "not a finite number"),
    ],
)
def test_validate_names_the_problem(node: Filter, message: str) -> None:
    spec = HYDRATION if "hydrated" in repr(node) or "load" in repr(node) else FRONTIERS
    with pytest.raises(FilterError, match=message) as caught:
        validate(node, spec)
    assert caught.value.collection == spec.name


def test_validate_accepts_ints_for_doubles_and_plain_column_lists() -> None:
    validate(and_(ge("load", 1), eq("hydrated", False), is_null("load")), HYDRATION)
    validate(prefix("replica_id", "r"), FRONTIERS.columns)


def test_validate_refuses_non_filters_and_non_string_prefixes() -> None:
    with pytest.raises(FilterError, match="not a filter node"):
        validate(Not("x"), FRONTIERS)  # type: ignore[arg-type]
    with pytest.raises(FilterError, match="needs a string"):
        validate(prefix("replica_id", 1), FRONTIERS)  # type: ignore[arg-type]


def _deep(depth: int) -> Filter:
    node: Filter = eq("replica_id", "r1")
    for _ in range(depth - 1):
        node = Not(node)
    return node


def test_shape_limits() -> None:
    validate(_deep(MAX_DEPTH), FRONTIERS)
    assert shape(_deep(MAX_DEPTH)) == (MAX_DEPTH, MAX_DEPTH)
    with pytest.raises(FilterError, match="deeper than 32"):
        validate(_deep(MAX_DEPTH + 1), FRONTIERS)
    with pytest.raises(FilterError, match="deeper than 32"):
        evaluate(_deep(10_000), ROW, COLUMNS)  # refused before any recursion
    wide = Or(tuple(eq("worker_id", i) for i in range(MAX_NODES)))
    with pytest.raises(FilterError, match="more than 1000 nodes"):
        validate(wide, FRONTIERS)


def test_value_limit_counts_every_value_of_an_in_list() -> None:
    validate(In("worker_id", tuple(range(MAX_VALUES))), FRONTIERS)
    with pytest.raises(FilterError, match="more than 10000 values"):
        validate(In("worker_id", tuple(range(MAX_VALUES + 1))), FRONTIERS)
    two = And((In("worker_id", tuple(range(MAX_VALUES // 2))), In("export_id", ("a",) * 5001)))
    with pytest.raises(FilterError, match="more than 10000 values"):
        validate(two, FRONTIERS)


def test_a_large_in_list_plans_and_evaluates_in_linear_time() -> None:
    # 10,000 distinct values: a quadratic de-duplication or membership test would do 10^8
    # comparisons here; the lookup keeps each key once, in order, and matching is a set test.
    values = tuple(range(MAX_VALUES))
    lookup = index_lookup(In("worker_id", values + values[:10]), ("worker_id",))
    assert lookup is not None
    assert [value for _, value in lookup.keys] == list(values)
    assert evaluate(In("worker_id", values), ("r1", "e", MAX_VALUES - 1, None), COLUMNS)
    assert not evaluate(In("worker_id", values), ("r1", "e", MAX_VALUES, None), COLUMNS)
    assert not evaluate(In("worker_id", (1,)), ("r1", "e", True, None), COLUMNS)


def test_describe() -> None:
    node = and_(
        eq("replica_id", "r'1"),
        gt("worker_id", 3),
        or_(is_null("frontier"), in_("export_id", ["a", "b"])),
        not_(prefix("export_id", "x")),
    )
    assert describe(node) == (
        "replica_id = 'r''1' AND worker_id > 3 AND (frontier IS NULL OR export_id IN ('a', 'b'))"
        " AND NOT (export_id STARTS WITH 'x')"
    )
    assert describe(and_(eq("odd name", None), ne("b", True), le("c", 2.5))) == (
        '"odd name" = NULL AND b != TRUE AND c <= 2.5'
    )
    assert describe(or_(lt("a", 1), ge("b", False))) == "a < 1 OR b >= FALSE"
    assert describe(And(())) == "TRUE"
    assert describe(Or(())) == "FALSE"
    assert describe(and_(or_(eq("a", 1)))) == "a = 1"


INDEXED = ("replica_id", "worker_id")


@pytest.mark.parametrize(
    ("node", "expected"),
    [
        (eq("replica_id", "r1"), IndexLookup((("replica_id", "r1"),))),
        (
            in_("replica_id", ["r1", "r2", "r1"]),
            IndexLookup((("replica_id", "r1"), ("replica_id", "r2"))),
        ),
        (
            and_(gt("frontier", 1), eq("replica_id", "r1")),
            IndexLookup((("replica_id", "r1"),), gt("frontier", 1)),
        ),
        (
            and_(gt("frontier", 1), eq("replica_id", "r1"), is_null("export_id")),
            IndexLookup((("replica_id", "r1"),), and_(gt("frontier", 1), is_null("export_id"))),
        ),
        (and_(eq("replica_id", "r1")), IndexLookup((("replica_id", "r1"),))),
        (
            or_(eq("replica_id", "r1"), eq("worker_id", 2)),
            IndexLookup((("replica_id", "r1"), ("worker_id", 2))),
        ),
        (eq("export_id", "a"), None),
        (ne("replica_id", "r1"), None),
        (prefix("replica_id", "r"), None),
        (not_(eq("replica_id", "r1")), None),
        (or_(eq("replica_id", "r1"), eq("export_id", "a")), None),
        (and_(gt("frontier", 1), is_null("replica_id")), None),
        (eq("worker_id", True), None),  # booleans are never indexed
        (Or(()), None),
    ],
)
def test_index_lookup(node: Filter, expected: IndexLookup | None) -> None:
    assert index_lookup(node, INDEXED) == expected


def test_index_lookup_of_or_with_residuals_keeps_the_whole_or() -> None:
    node = or_(and_(eq("replica_id", "r1"), gt("frontier", 1)), eq("replica_id", "r2"))
    lookup = index_lookup(node, INDEXED)
    assert lookup == IndexLookup((("replica_id", "r1"), ("replica_id", "r2")), node)


def _index(rows: set[Row]) -> dict[tuple[str, object], set[Row]]:
    index: dict[tuple[str, object], set[Row]] = {}
    for row in rows:
        for column in INDEXED:
            value = row[COLUMNS.index(column)]
            if value is not None:
                index.setdefault((column, value), set()).add(row)
    return index


_ROWS = st.sets(st.one_of([model_rows(FRONTIERS, r) for r in ("r1", "r2", "r3")]), max_size=24)
_LOOKUPS = st.one_of(
    st.builds(eq, st.just("replica_id"), st.sampled_from(("r1", "r2"))),
    st.builds(in_, st.just("worker_id"), st.lists(st.integers(0, 3), min_size=1, max_size=2)),
)
_ANY = valid_filters(FRONTIERS)
# Mostly filters an index can answer, so the property is not vacuous.
_FILTERS = st.one_of(
    _ANY,
    st.builds(and_, _ANY, _LOOKUPS, _ANY),
    st.builds(or_, _LOOKUPS, st.builds(and_, _LOOKUPS, _ANY)),
    st.builds(and_, st.builds(or_, _LOOKUPS, _LOOKUPS), _ANY),
)


@settings(max_examples=200, deadline=None)
@given(_FILTERS, _ROWS)
def test_index_lookup_is_exact(node: Filter, rows: set[Row]) -> None:
    matches = compile_filter(node, COLUMNS)
    expected = {row for row in rows if matches(row)}
    lookup = index_lookup(node, INDEXED)
    if lookup is None:
        return
    index = _index(rows)
    candidates = set().union(*(index.get(key, set()) for key in lookup.keys))
    residual = compile_filter(lookup.residual, COLUMNS) if lookup.residual else None
    assert {row for row in candidates if residual is None or residual(row)} == expected


def test_constructors_normalise_sequences() -> None:
    assert In("a", [1, 2]) == In("a", (1, 2))  # type: ignore[arg-type]
    assert And([eq("a", 1)]) == and_(eq("a", 1))  # type: ignore[arg-type]
    assert Or([eq("a", 1)]) == or_(eq("a", 1))  # type: ignore[arg-type]
    assert hash(and_(eq("a", 1), in_("b", [1]))) == hash(and_(eq("a", 1), in_("b", (1,))))
