"""The nemesis's schedules: a seed gives one schedule, each lane injects every kind of its
own early, and the membership changes keep the replicas within their bounds."""

from __future__ import annotations

from itertools import islice

import pytest

from tests.model import nemesis
from tests.model.nemesis import (
    GAPS,
    HOLDS,
    LANES,
    MAX_AGENTS,
    MEMBERSHIP,
    MIN_AGENTS,
    REPLICA_ADD,
    REPLICA_READD,
    REPLICA_REMOVE,
    START_AGENTS,
    Fault,
)


@pytest.mark.parametrize("lane", sorted(LANES))
def test_a_seed_gives_one_schedule_and_another_seed_another(lane: str) -> None:
    first = list(islice(nemesis.faults(42, lane), 30))
    assert first == list(islice(nemesis.faults(42, lane), 30))
    assert first != list(islice(nemesis.faults(43, lane), 30))


@pytest.mark.parametrize("lane", sorted(LANES))
def test_each_round_of_a_lane_holds_every_kind_once_within_its_bounds(lane: str) -> None:
    kinds = LANES[lane]
    for seed in range(20):
        schedule = list(islice(nemesis.faults(seed, lane), 3 * len(kinds)))
        for round_start in range(0, len(schedule), len(kinds)):
            one_round = schedule[round_start : round_start + len(kinds)]
            assert sorted(f.kind for f in one_round) == sorted(kinds)
        for fault in schedule:
            low, high = HOLDS[fault.kind]
            assert low <= fault.hold_s <= high
            assert GAPS[lane][0] <= fault.gap_s <= GAPS[lane][1]


def test_membership_keeps_the_replicas_within_bounds_and_re_adds_only_removed_ones() -> None:
    for seed in range(50):
        count, removed = START_AGENTS, 0
        kinds = set()
        for change in islice(nemesis.membership(seed), 200):
            kinds.add(change.kind)
            if change.kind == REPLICA_REMOVE:
                count, removed = count - 1, removed + 1
            elif change.kind == REPLICA_READD:
                assert removed > 0
                count, removed = count + 1, removed - 1
            else:
                count += 1
            assert MIN_AGENTS <= count <= MAX_AGENTS
            assert GAPS[MEMBERSHIP][0] <= change.gap_s <= GAPS[MEMBERSHIP][1]
        assert kinds == {REPLICA_ADD, REPLICA_READD, REPLICA_REMOVE}


def test_a_fault_picks_its_target_from_the_candidates_in_their_order() -> None:
    fault = Fault("k", pick=7, hold_s=0, gap_s=0)
    assert fault.target(["a", "b", "c"]) == "b"
    assert fault.target(["x"]) == "x"
