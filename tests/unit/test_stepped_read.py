"""The stepped read against an adversarial in-memory collection that changes between calls.

The collection changes between any two calls of the read: appends and retractions at new
times, and deletes that run in steps (answered at their time, their rows left out, the time
readable only when done), as Redis does. Its scan promises no more than Redis's SCAN: a row
present all along is returned, others may or may not be, and a row may come twice.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.stepped_read import (
    Change,
    ScanStep,
    ServerChanged,
    Span,
    SteppedReadError,
    moved_to,
    read_at,
)

ROWS = 12  # the universe of rows: 0..11; row r is wanted when r % 3 != 0


@dataclasses.dataclass
class Collection:
    """Contents, a change log and a delete in progress, changed by queued events."""

    events: list[
        tuple[str, int, int]
    ]  # ("add", row, diff) | ("delete" | "drop", first, count) | ("thin", row, step)
    surprises: list[bool]  # per scan step: also return a row seen before (a rehash)
    contents: dict[int, int] = dataclasses.field(default_factory=dict)
    log: list[Change[int]] = dataclasses.field(default_factory=list)
    readable_time: int = 0
    history: dict[int, dict[int, int]] = dataclasses.field(default_factory=lambda: {0: {}})
    pending: list[int] | None = None  # rows a delete in progress has still to retract
    doomed: frozenset[int] = frozenset()
    trimmed: int = 0
    server: str = "a"
    universe: int = ROWS  # rows are 0 .. universe - 1

    def _time_now(self) -> int:
        return self.readable_time + 1 if self.pending is not None else self.readable_time

    def advance(self) -> None:
        """One event: a step of the delete in progress, or the next queued event."""
        if self.pending is not None:
            time = self.readable_time + 1
            for row in self.pending[:2]:
                self._add(time, row, -self.contents.get(row, 0))
            self.pending = self.pending[2:]
            if not self.pending:
                self.pending, self.doomed = None, frozenset()
                self._complete(time)
            return
        if not self.events:
            return
        kind, row, value = self.events.pop(0)
        time = self.readable_time + 1
        if kind == "add":
            self._add(time, row, value)
            self._complete(time)
        elif kind == "drop":  # retractions of a range of rows at one time
            for r in range(row, row + value):
                self._add(time, r % self.universe, -self.contents.get(r % self.universe, 0))
            self._complete(time)
        elif kind == "thin":  # every row but one in `value` retracted at one time
            for r in [r for r in self.contents if r % value != row % value]:
                self._add(time, r, -self.contents[r])
            self._complete(time)
        else:
            wrapped = [r % self.universe for r in range(row, row + value)]
            doomed = [r for r in wrapped if self.contents.get(r)]
            if doomed:
                self.pending, self.doomed = doomed, frozenset(doomed)

    def _add(self, time: int, row: int, diff: int) -> None:
        if diff == 0:
            return
        count = self.contents.get(row, 0) + diff
        if count:
            self.contents[row] = count
        else:
            self.contents.pop(row, None)
        self.log.append(Change(time, row, diff))

    def _complete(self, time: int) -> None:
        self.readable_time = time
        self.history[time] = dict(self.contents)

    def _visible(self, row: int) -> int:
        return 0 if row in self.doomed else self.contents.get(row, 0)


@dataclasses.dataclass
class Reads:
    """``StepReads`` over a ``Collection``: before each call, ``pace`` events happen."""

    collection: Collection
    pace: list[int]
    calls: int = 0

    def _between_calls(self) -> None:
        for _ in range(self.pace[self.calls % len(self.pace)]):
            self.collection.advance()
        self.calls += 1

    def scan(self, cursor: object | None) -> ScanStep[int]:
        self._between_calls()
        c = self.collection
        position = 0 if cursor is None else int(str(cursor))
        found = {r: c._visible(r) for r in (position, position + 1) if c._visible(r)}
        step_number = position // 2
        start, again = position, None
        if step_number < len(c.surprises) and c.surprises[step_number] and position > 0:
            # A stretch scanned again, as a shrunk table does, and said so (scan_order.py).
            start = position - 1
            again = Span((0, start), (0, position))
            if c._visible(start):
                found[start] = c._visible(start)
        found = {r: n for r, n in found.items() if self.wanted(r)}
        following = position + 2
        covers = Span((0, start), (0, following))
        cursor = following if following < ROWS else None
        return ScanStep(c._time_now(), c.server, cursor, found, covers, again)

    def counts(self, rows: Sequence[int]) -> tuple[int, list[int]]:
        self._between_calls()
        return self.collection._time_now(), [self.collection._visible(r) for r in rows]

    def readable(self) -> int:
        return self.collection.readable_time

    def wait_readable(self, time: int) -> None:
        while self.collection.readable_time < time:
            self.collection.advance()

    def changes(self, after: int, through: int) -> Iterable[Change[int]]:
        return [c for c in self.collection.log if after < c.time <= through]

    def trimmed_through(self) -> int:
        return self.collection.trimmed

    def wanted(self, row: int) -> bool:
        return row % 3 != 0


events = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, ROWS - 1), st.integers(-2, 3)),
        st.tuples(st.just("delete"), st.integers(0, ROWS - 1), st.integers(1, 6)),
    ),
    max_size=40,
)


@settings(max_examples=2000, deadline=None)
@given(
    events=events,
    warm_up=st.integers(0, 20),
    pace=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    surprises=st.lists(st.booleans(), max_size=6),
    limit=st.none() | st.integers(1, ROWS),
    visible=st.booleans(),
)
def test_a_stepped_read_equals_the_collection_at_its_time(
    events: list[tuple[str, int, int]],
    warm_up: int,
    pace: list[int],
    surprises: list[bool],
    limit: int | None,
    visible: bool,
) -> None:
    collection = Collection(events, surprises)
    for _ in range(warm_up):
        collection.advance()
    # The time readers see (a delete's while it is in progress), or the last readable one.
    as_of = collection._time_now() if visible else collection.readable_time
    reads = Reads(collection, pace)
    result = read_at(reads, as_of, reads.wait_readable, limit)
    while as_of not in collection.history:  # the delete the read began in is still going
        collection.advance()
    expected = {r: n for r, n in collection.history[as_of].items() if reads.wanted(r)}
    if limit is None:
        assert result == expected
    else:  # any `limit` rows of the snapshot, each exact
        assert len(result) == min(limit, len(expected))
        assert result.items() <= expected.items()


def test_a_read_whose_log_was_trimmed_after_its_time_is_refused() -> None:
    collection = Collection([("add", 1, 1), ("add", 2, 1)], [])
    collection.advance()
    reads = Reads(collection, [1])
    collection.trimmed = 2
    with pytest.raises(SteppedReadError, match="trimmed through 2"):
        read_at(reads, 1, reads.wait_readable)


def test_a_scan_that_meets_another_server_says_so() -> None:
    collection = Collection([], [])
    reads = Reads(collection, [0])
    original = reads.scan

    def failing_over(cursor: object | None) -> ScanStep[int]:
        step = original(cursor)
        collection.server = "b"
        return step

    reads.scan = failing_over  # type: ignore[method-assign]
    with pytest.raises(ServerChanged):
        read_at(reads, 0, reads.wait_readable)


def test_multiplicities_move_forwards_and_backwards_through_the_log() -> None:
    log = [Change(2, "a", 1), Change(3, "b", -1), Change(4, "a", 2), Change(5, "c", 7)]
    counts, times = {"a": 3, "b": 2, "c": 7}, {"a": 4, "b": 1, "c": 5}
    # a: seen at 4 with 3, its change at 4 undone -> 1 (the one at 2 is in both);
    # b: seen at 1 with 2, its change at 3 applied -> 1; c: seen at 5 with 7, its change at
    # 5 undone -> 0, left out.
    assert moved_to(3, counts, times, log) == {"a": 1, "b": 1}
