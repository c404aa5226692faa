"""The streamed read's record of rows handed on (``storage/streamed.SpilledEmitted``)
answers as the in-memory one does, whether a row's encoding is the bytes a scan read (the
row decoded from them) or made again by ``encode_row``: the two are one, doubles, -0.0,
large numbers and any text included, so no row is handed on twice."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.specs import Row
from collection_manager.core.stepped_read import Span
from collection_manager.core.streamed_read import EmittedInMemory
from collection_manager.storage.rows import decode_rows, encode_row
from collection_manager.storage.streamed import SpilledEmitted

DOUBLES = frozenset({2})  # the third column is a double column: its ints are stored as floats
numbers = st.integers(-(2**53) + 1, 2**53 - 1)
doubles = numbers | st.floats(allow_nan=False, allow_infinity=False)
# A column holds one type (1 == True in Python, not in a collection).
rows = st.tuples(st.none() | st.text(max_size=3), numbers, doubles, st.booleans())
spans = st.none() | st.builds(
    lambda low, width: Span((0, low), (0, low + width)), st.integers(0, 5), st.integers(0, 3)
)
steps = st.lists(st.tuples(st.lists(rows, max_size=6), spans), max_size=6)


def _stored(row: Row) -> bytes:
    return encode_row(row, DOUBLES).encode()


@settings(max_examples=300, deadline=None)
@given(steps=steps, asked=st.lists(rows, max_size=8), within=spans, scanned=st.booleans())
def test_the_spilled_record_answers_as_the_one_in_memory(
    steps: list[tuple[list[Row], Span | None]],
    asked: list[Row],
    within: Span | None,
    scanned: bool,
) -> None:
    last_step: dict[Row, bytes] = {}

    def encoding(row: Row) -> bytes:
        # As the scan's bytes (kept for the last step) or made again from the row.
        found = last_step.get(row) if scanned else None
        return found if found is not None else _stored(row)

    memory: EmittedInMemory[Row] = EmittedInMemory()
    spilled = SpilledEmitted(encoding)
    try:
        for written, covers in steps:
            # What a scan hands on: the rows decoded from the bytes Redis holds.
            stored = list(dict.fromkeys(map(_stored, written)))
            handed = decode_rows(stored)
            last_step.clear()
            last_step.update(zip(handed, stored, strict=True))
            memory.add(handed, covers)
            spilled.add(handed, covers)
        wanted = set(decode_rows([_stored(row) for row in asked]))
        assert spilled.among(wanted, within) == memory.among(wanted, within)
        assert spilled.among(wanted) == memory.among(wanted)
    finally:
        spilled.close()
