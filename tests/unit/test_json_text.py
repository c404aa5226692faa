"""The JSON of answers: what JSON cannot hold is written as stated in core/json_text.py."""

from __future__ import annotations

import json
import math

from hypothesis import given
from hypothesis import strategies as st

from collection_manager.core.json_text import compact, indented

LONG = st.integers(min_value=-(2**63), max_value=2**63 - 1)
VALUES = st.recursive(
    st.none() | st.booleans() | LONG | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_nan_and_infinities_become_null_so_every_answer_is_json() -> None:
    assert compact([math.nan, math.inf, -math.inf, 0.5]) == b"[null,null,null,0.5]"


def test_longs_are_exact_at_both_ends_of_64_bits() -> None:
    assert compact([2**63 - 1, -(2**63)]) == b"[9223372036854775807,-9223372036854775808]"


def test_number_keys_become_strings_and_text_stays_utf8() -> None:
    assert compact({0: 3, "réplica": "ü"}) == '{"0":3,"réplica":"ü"}'.encode()


@given(VALUES)
def test_any_value_reads_back_as_the_standard_library_wrote_it(value: object) -> None:
    assert json.loads(compact(value)) == json.loads(json.dumps(value))
    assert json.loads(indented(value)) == json.loads(json.dumps(value))


def test_the_command_lines_json_is_indented_by_two_and_shows_a_path_as_text() -> None:
    from pathlib import Path

    assert indented({"a": [1], "at": Path("/x")}) == '{\n  "a": [\n    1\n  ],\n  "at": "/x"\n}'
