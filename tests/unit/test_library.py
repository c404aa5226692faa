"""The contract between the Python store and its Redis library, checked without Redis."""

from __future__ import annotations

import dataclasses

from collection_manager.storage.counters import APPLY_COUNTERS, COUNTERS, SHOWN_COUNTERS
from collection_manager.testing.model import ModelCounters


def test_every_counter_list_is_drawn_from_the_one_tuple() -> None:
    assert len(set(COUNTERS)) == len(COUNTERS)
    for subset in (APPLY_COUNTERS, SHOWN_COUNTERS):
        assert [c for c in COUNTERS if c in subset] == list(subset)
    assert "scheduled_retractions" not in APPLY_COUNTERS  # the timer counts it, not requests


def test_the_oracle_counts_under_the_store_names() -> None:
    assert {f.name for f in dataclasses.fields(ModelCounters)} <= set(COUNTERS)
