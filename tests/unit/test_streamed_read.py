"""The streamed stepped read against the adversarial collection of ``test_stepped_read``:
the same rows at the same time as ``read_at``, each once, handed on a step at a time."""

from __future__ import annotations

import collections

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.stepped_read import ScanStep
from collection_manager.core.streamed_read import EmittedInMemory, stream_at
from tests.unit.test_stepped_read import ROWS, Collection, Reads, events


@settings(max_examples=1000, deadline=None)
@given(
    events=events,
    warm_up=st.integers(0, 20),
    pace=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    limit=st.none() | st.integers(1, ROWS),
    visible=st.booleans(),
)
def test_a_streamed_read_hands_on_the_collection_at_its_time_each_row_once(
    events: list[tuple[str, int, int]],
    warm_up: int,
    pace: list[int],
    limit: int | None,
    visible: bool,
) -> None:
    collection = Collection(events, [])
    for _ in range(warm_up):
        collection.advance()
    as_of = collection._time_now() if visible else collection.readable_time
    reads = Reads(collection, pace)
    handed = collections.Counter[int]()
    result: dict[int, int] = {}
    for batch in stream_at(reads, as_of, reads.wait_readable, EmittedInMemory(), limit):
        handed.update(batch.keys())
        result.update(batch)
    while as_of not in collection.history:  # the delete the read began in is still going
        collection.advance()
    expected = {r: n for r, n in collection.history[as_of].items() if reads.wanted(r)}
    assert all(times == 1 for times in handed.values())
    if limit is None:
        assert result == expected
    else:  # any `limit` rows of the snapshot, each exact
        assert len(result) == min(limit, len(expected))
        assert result.items() <= expected.items()


@settings(max_examples=300, deadline=None)
@given(
    events=events,
    pace=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    surprises=st.lists(st.booleans(), max_size=6),
)
def test_a_row_a_scan_returns_again_is_handed_on_once(
    events: list[tuple[str, int, int]], pace: list[int], surprises: list[bool]
) -> None:
    """A scan may return a row twice (a shrinking table), saying where it may have: the
    row is handed on once, whether it changed or not."""
    collection = Collection(events, surprises)
    as_of = collection.readable_time
    reads = Reads(collection, pace)
    handed = collections.Counter[int]()
    result: dict[int, int] = {}
    for batch in stream_at(reads, as_of, reads.wait_readable, EmittedInMemory()):
        handed.update(batch.keys())
        result.update(batch)
    expected = {r: n for r, n in collection.history[as_of].items() if reads.wanted(r)}
    assert all(times == 1 for times in handed.values())
    assert result == expected


def test_nothing_is_read_before_the_last_step_was_taken() -> None:
    """The reader holds one step: each step is scanned only when the one before was taken."""
    collection = Collection([("add", r, 1) for r in range(ROWS)], [])
    for _ in range(ROWS):
        collection.advance()
    reads = Reads(collection, [0])
    scanned: list[ScanStep[int]] = []
    scan = reads.scan

    def counted(cursor: object | None) -> ScanStep[int]:
        scanned.append(scan(cursor))
        return scanned[-1]

    reads.scan = counted  # type: ignore[method-assign]
    stream = stream_at(reads, collection.readable_time, reads.wait_readable, EmittedInMemory())
    assert scanned == []  # a generator: nothing read until asked
    taken = 0
    for batch in stream:
        taken += 1
        assert len(scanned) == taken  # the step handed on is the last one scanned
        assert batch == dict(scanned[-1].rows)
    assert taken == len(scanned) == ROWS // 2
