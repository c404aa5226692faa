"""The canonical row encoding: its fast paths write what the plain definition writes."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.core.errors import SchemaError
from collection_manager.storage.rows import decode_row, decode_rows, encode_row

values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e16, -1e-7, 0.5]),
    st.text(),
    st.sampled_from(["-0.0", 'é\u2028"\\', "]", "\n"]),
)
rows = st.lists(values, max_size=6)


def by_definition(row: list[object], doubles: frozenset[int]) -> str:
    """The encoding as docs/concepts/collections-and-time.md defines it: compact JSON of the
    canonical values."""
    canonical = [
        float(v) if i in doubles and type(v) is int else 0.0 if v == 0.0 and type(v) is float else v
        for i, v in enumerate(row)
    ]
    return json.dumps(canonical, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


@given(rows, st.frozensets(st.integers(min_value=0, max_value=6), max_size=3))
def test_encoding_is_the_definition_for_lists_and_tuples(
    row: list[object], doubles: frozenset[int]
) -> None:
    expected = by_definition(row, doubles)
    assert encode_row(row, doubles) == expected
    assert encode_row(tuple(row), doubles) == expected


@given(rows)
def test_decoding_gives_the_canonical_values_back(row: list[object]) -> None:
    decoded = decode_row(encode_row(row))
    assert decoded == tuple(0.0 if v == 0.0 and type(v) is float else v for v in row)


@given(st.lists(rows, max_size=8))
def test_many_rows_decode_as_each_alone(many: list[list[object]]) -> None:
    encoded = [encode_row(row).encode() for row in many]
    assert decode_rows(encoded) == [decode_row(e) for e in encoded]


def _outcome(decode: Callable[[], object]) -> object:
    """What ``decode`` returns, or the type of the error it raises."""
    try:
        return decode()
    except (ValueError, TypeError) as exc:
        return type(exc)


@pytest.mark.parametrize("bad", [b'["a"],["b"]', b"5", b'["a"', b"", b'{"a":1}'], ids=repr)
def test_a_stored_value_that_is_not_one_row_decodes_as_alone(bad: bytes) -> None:
    """A value ``encode_row`` never writes must not shift the rows after it: the batch
    gives what decoding each alone gives, the same rows or the same error."""
    encoded = [encode_row(("r", 1)).encode(), bad, encode_row(("s", 2)).encode()]
    alone = _outcome(lambda: [decode_row(e) for e in encoded])
    assert _outcome(lambda: decode_rows(encoded)) == alone


def test_minus_zero_is_stored_as_zero_in_any_column() -> None:
    assert encode_row(("r", -0.0)) == '["r",0.0]'
    assert encode_row(("-0.0", 1)) == '["-0.0",1]'  # the text alone changes nothing
    assert encode_row(("r", 1), frozenset({1})) == '["r",1.0]'


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), float("-inf")])
def test_a_value_json_cannot_hold_is_a_schema_error(bad: float) -> None:
    with pytest.raises(SchemaError, match="cannot be stored"):
        encode_row(("r", bad))
    with pytest.raises(SchemaError, match="cannot be stored"):
        encode_row(("r", bad), frozenset({1}))
