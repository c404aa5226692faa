"""A coalesced task's chunk split into its Kafka partitions (``applier.by_partition``)."""

from __future__ import annotations

import pandas as pd
from hypothesis import given
from hypothesis import strategies as st

from spark_consumers.applier import by_partition


def test_a_chunk_spanning_two_partitions_is_applied_partition_by_partition() -> None:
    frame = pd.DataFrame({"partition": [2, 2, 0, 0, 0], "offset": [7, 8, 3, 4, 5]})
    parts = [list(zip(p["partition"], p["offset"], strict=True)) for p in by_partition(frame)]
    assert parts == [[(2, 7), (2, 8)], [(0, 3), (0, 4), (0, 5)]]


def test_an_empty_chunk_applies_nothing() -> None:
    assert list(by_partition(pd.DataFrame({"partition": [], "offset": []}))) == []


@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 10**6)), max_size=40))
def test_every_row_is_kept_once_in_its_partition_and_in_order(rows: list[tuple[int, int]]) -> None:
    frame = pd.DataFrame(rows, columns=["partition", "offset"])
    parts = list(by_partition(frame))
    assert all(p["partition"].nunique() == 1 for p in parts)
    assert len({int(p["partition"].iloc[0]) for p in parts}) == len(parts)
    for part in parts:
        mine = [o for q, o in rows if q == part["partition"].iloc[0]]
        assert list(part["offset"]) == mine
    assert sum(len(p) for p in parts) == len(rows)
