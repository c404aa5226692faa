"""Consolidation, collection state and delete retractions."""

from __future__ import annotations

from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.filters import eq, gt
from collection_manager.core.planning import consolidate
from collection_manager.core.requests import Update
from tests.model.collection_state import (
    CollectionState,
    delete_retractions,
    row_replica,
)
from tests.model.membership import ModelFences

A, B, C = ("r1", 1), ("r1", 2), ("r2", 1)
COLUMNS = ["replica_id", "n"]


def test_consolidate_sums_keeps_zeros_and_first_appearance_order() -> None:
    # Zero sums stay: the rows were named, which decides their TTL
    # (docs/concepts/ttl-and-expiration.md).
    updates = [(B, 1), (A, 2), (B, -1), (C, 0), (A, 1), (C, -3)]
    assert consolidate(updates) == [(B, 0), (A, 3), (C, -3)]
    assert consolidate([]) == []


_UPDATES = st.lists(st.tuples(st.sampled_from([A, B, C]), st.integers(-3, 3)), max_size=20)


@settings(max_examples=200, deadline=None)
@given(_UPDATES)
def test_consolidated_updates_have_the_same_effect(updates: list[Update]) -> None:
    consolidated = consolidate(updates)
    raw, merged = CollectionState(), CollectionState()
    raw.apply(updates)
    merged.apply(consolidated)
    assert raw == merged
    assert len({row for row, _ in consolidated}) == len(consolidated)
    totals: Counter[object] = Counter()
    for row, diff in updates:
        totals[row] += diff
    assert dict(consolidated) == dict(totals)


def test_state_keeps_negative_multiplicities_and_counts_them() -> None:
    state = CollectionState({A: 1, B: 0})
    assert len(state) == 1
    outcome = state.apply([(A, -2), (C, -1), (B, 0), (A, -1), (C, 1)], ModelFences({"r2": 1}))
    assert outcome.written == 4
    assert outcome.invalid_retractions == 2  # A to -1, then A to -2
    assert outcome.fenced_invalid_retractions == 1  # C, whose replica is fenced
    assert state.rows() == {A: -2}
    assert state.negative_rows() == {A: -2}
    assert state.multiplicity(C) == 0
    assert repr(state) == "CollectionState({('r1', 1): -2})"
    assert state != {A: -2}


def test_an_insertion_that_stays_negative_is_not_an_invalid_retraction() -> None:
    state = CollectionState({A: -3})
    assert state.apply([(A, 1)]).invalid_retractions == 0


def test_delete_retractions_take_full_multiplicities() -> None:
    state = CollectionState()
    state.apply([(A, 2), (B, -1), (C, 5)])
    retractions = delete_retractions(state, eq("replica_id", "r1"), COLUMNS)
    assert retractions == [(A, -2), (B, 1)]
    state.apply(retractions)
    assert state.rows() == {C: 5}
    assert delete_retractions(state, gt("n", 5), COLUMNS) == []


def test_row_replica() -> None:
    assert row_replica(("r1", 1)) == "r1"
    assert row_replica((1, "r1")) is None
    assert row_replica(()) is None
