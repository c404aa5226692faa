"""The streamed read's record of rows handed on (``storage/streamed.SpilledEmitted``)
answers as the in-memory one does, whether a row's encoding came from the scan's bytes
or was made again by ``encode_row``."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.specs import Row
from collection_manager.core.stepped_read import Span
from collection_manager.core.streamed_read import EmittedInMemory
from collection_manager.storage.rows import encode_row
from collection_manager.storage.streamed import SpilledEmitted

rows = st.tuples(st.sampled_from(["a", "b", "é"]), st.integers(-3, 3), st.booleans())
spans = st.none() | st.builds(
    lambda low, width: Span((0, low), (0, low + width)), st.integers(0, 5), st.integers(0, 3)
)
steps = st.lists(st.tuples(st.sets(rows, max_size=6), spans), max_size=6)


@settings(max_examples=300, deadline=None)
@given(steps=steps, asked=st.sets(rows, max_size=8), within=spans, scanned=st.booleans())
def test_the_spilled_record_answers_as_the_one_in_memory(
    steps: list[tuple[set[Row], Span | None]],
    asked: set[Row],
    within: Span | None,
    scanned: bool,
) -> None:
    last_step: dict[Row, bytes] = {}

    def encoding(row: Row) -> bytes:
        # As the scan's bytes (kept for the last step) or made again: the same bytes.
        found = last_step.get(row) if scanned else None
        return found if found is not None else encode_row(row).encode()

    memory: EmittedInMemory[Row] = EmittedInMemory()
    spilled = SpilledEmitted(encoding)
    try:
        for handed, covers in steps:
            last_step.clear()
            last_step.update((row, encode_row(row).encode()) for row in handed)
            memory.add(handed, covers)
            spilled.add(handed, covers)
        assert spilled.among(asked, within) == memory.among(asked, within)
        assert spilled.among(asked) == memory.among(asked)
    finally:
        spilled.close()
