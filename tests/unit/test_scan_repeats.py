"""A streamed read over a table that rehashes as Redis's does (``scan_table.py``): rows
are added, retracted and deleted between any two steps, the table grows and shrinks under
the scan, which then returns elements again; each row is handed on once, at its
multiplicity at the read's time. The model itself is checked against the rule the read
relies on (``core/scan_order.py``): every element found again was found in a stretch the
step said it may have scanned again."""

from __future__ import annotations

import collections
import dataclasses
import random

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.stepped_read import ScanStep, Span
from collection_manager.core.streamed_read import EmittedInMemory, stream_at
from collection_manager.storage.step_reads import scan_spans
from tests.unit.scan_table import Table
from tests.unit.test_stepped_read import Collection, Reads

UNIVERSE = 600


@dataclasses.dataclass
class TableCollection(Collection):
    """The adversarial collection, its rows kept in a Redis-like table."""

    table: Table = dataclasses.field(default_factory=lambda: Table(seed=0))

    def _add(self, time: int, row: int, diff: int) -> None:
        before = row in self.contents
        super()._add(time, row, diff)
        if row in self.contents and not before:
            self.table.add(row)
        elif before and row not in self.contents:
            self.table.delete(row)


@dataclasses.dataclass
class TableReads(Reads):
    """``StepReads`` whose scan is HSCAN's over the table, with cm_scan's probe."""

    count: int = 10

    def scan(self, cursor: object | None) -> ScanStep[int]:
        self._between_calls()
        c = self.collection
        assert isinstance(c, TableCollection)
        given_cursor = 0 if cursor is None else int(str(cursor))
        probe = c.table.scan(0, 1)[0] if given_cursor else 0
        following, found = c.table.scan(given_cursor, self.count)
        rows = {r: c._visible(r) for r in found if c._visible(r) and self.wanted(r)}
        done = (0, 0) if following == 0 else (1, following)
        covers, again = scan_spans((1, given_cursor), done, probe)
        return ScanStep(c._time_now(), c.server, following or None, rows, covers, again)

    def counts(self, rows: list[int]) -> tuple[int, list[int]]:  # type: ignore[override]
        table = self.collection
        assert isinstance(table, TableCollection)
        for row in rows:
            table.table.find(row)  # a lookup moves a rehash on, as HGET does
        return super().counts(rows)


def _collection(seed: int, rows: int, events: list[tuple[str, int, int]]) -> TableCollection:
    collection = TableCollection(events, [], universe=UNIVERSE, table=Table(seed=seed))
    for row in range(rows):  # a large table to begin with, so that a delete shrinks it
        collection._add(1, row, 1)
    collection._complete(1)
    while collection.table.rehashing:  # a table mid-rehash does not shrink yet
        collection.table.find(0)
    return collection


table_events = st.lists(
    st.one_of(
        st.tuples(st.just("add"), st.integers(0, UNIVERSE - 1), st.integers(-2, 3)),
        st.tuples(st.just("drop"), st.integers(0, UNIVERSE - 1), st.integers(1, UNIVERSE)),
        # Most of the rows at once, some left unchanged: the table shrinks under the scan.
        st.tuples(st.just("thin"), st.integers(0, 40), st.integers(11, 40)),
        st.tuples(st.just("delete"), st.integers(0, UNIVERSE - 1), st.integers(1, 6)),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**16),
    rows=st.integers(130, 500),
    events=table_events,
    pace=st.lists(st.integers(0, 3), min_size=1, max_size=8),
    count=st.sampled_from([1, 4, 25]),
    limit=st.none() | st.integers(1, 300),
)
def test_a_streamed_read_through_shrinks_and_growth_hands_on_each_row_once(
    seed: int,
    rows: int,
    events: list[tuple[str, int, int]],
    pace: list[int],
    count: int,
    limit: int | None,
) -> None:
    collection = _collection(seed, rows, events)
    as_of = collection.readable_time
    reads = TableReads(collection, pace, count=count)
    handed = collections.Counter[int]()
    result: dict[int, int] = {}
    for batch in stream_at(reads, as_of, reads.wait_readable, EmittedInMemory(), limit):
        handed.update(batch.keys())
        result.update(batch)
    expected = {r: n for r, n in collection.history[as_of].items() if reads.wanted(r)}
    assert all(times == 1 for times in handed.values())
    if limit is None:
        assert result == expected
    else:
        assert len(result) == min(limit, len(expected))
        assert result.items() <= expected.items()


def test_the_table_returns_elements_again_only_where_a_step_says_it_may_have() -> None:
    repeats = 0
    for seed in range(60):
        chance, table = random.Random(seed), Table(seed=seed)
        elements = chance.randrange(200, 3000)
        for element in range(elements):
            table.add(element)
        first: dict[int, Span] = {}
        cursor = 0
        while True:
            probe = table.scan(0, 1)[0] if cursor else 0
            following, found = table.scan(cursor, chance.choice([3, 40, 300]))
            done = (0, 0) if following == 0 else (1, following)
            covers, again = scan_spans((1, cursor), done, probe)
            for element in found:
                if element in first:
                    repeats += 1
                    assert again is not None and first[element].overlaps(again), element
                else:
                    first[element] = covers
            if not following:
                break
            cursor = following
            if chance.random() < 0.2:  # most of the table deleted: a shrink
                keep = chance.random() * 0.15
                for element in range(elements):
                    if element in table and chance.random() > keep:
                        table.delete(element)
    assert repeats > 0, "the model shrinks under a scan and returns elements again"
