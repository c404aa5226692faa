"""The simulated replica is a deterministic source of true differential updates."""

from __future__ import annotations

import itertools
from collections import Counter

from hypothesis import given, settings
from hypothesis import strategies as st

from producers.simulated import (
    COLUMNS,
    COMPUTE_FRONTIERS,
    HYDRATION_STATUS,
    Row,
    SimulatedReplica,
    Update,
    apply_updates,
    large_snapshot,
)

replicas = st.builds(
    SimulatedReplica,
    workers=st.integers(1, 4),
    dataflows=st.integers(1, 6),
    seed=st.integers(0, 2**32),
)
ticks = st.integers(0, 25)


def _consolidated(updates: list[Update]) -> Counter[Row]:
    state: Counter[Row] = Counter()
    apply_updates(state, updates)
    return state


@given(replica=replicas, steps=ticks)
@settings(max_examples=60)
def test_snapshot_plus_steps_equals_state(replica: SimulatedReplica, steps: int) -> None:
    applied = {name: _consolidated(updates) for name, updates in replica.snapshot().items()}
    for _ in range(steps):
        for name, updates in replica.step().items():
            apply_updates(applied[name], updates)
        assert applied == replica.state()


@given(replica=replicas, steps=ticks)
@settings(max_examples=60)
def test_steps_only_retract_what_is_there(replica: SimulatedReplica, steps: int) -> None:
    for _ in range(steps):
        before = replica.state()
        for name, updates in replica.step().items():
            for row, diff in updates:
                assert diff != 0
                if diff < 0:
                    assert before[name][row] >= -diff
            after = before[name].copy()
            apply_updates(after, updates)
            assert all(count > 0 for count in after.values())


@given(replica=replicas, steps=ticks)
@settings(max_examples=60)
def test_steps_are_consolidated(replica: SimulatedReplica, steps: int) -> None:
    for _ in range(steps):
        for updates in replica.step().values():
            rows = [row for row, _ in updates]
            assert len(rows) == len(set(rows))


@given(replica=replicas)
def test_snapshot_is_the_state_as_insertions(replica: SimulatedReplica) -> None:
    snapshot = replica.snapshot()
    assert {name: _consolidated(updates) for name, updates in snapshot.items()} == replica.state()
    assert all(diff == 1 for updates in snapshot.values() for _, diff in updates)


@given(workers=st.integers(1, 4), dataflows=st.integers(1, 6), seed=st.integers(0, 2**32))
@settings(max_examples=30)
def test_same_seed_same_history(workers: int, dataflows: int, seed: int) -> None:
    first = SimulatedReplica(workers, dataflows, seed)
    second = SimulatedReplica(workers, dataflows, seed)
    assert first.snapshot() == second.snapshot()
    assert [first.step() for _ in range(10)] == [second.step() for _ in range(10)]


def test_different_seeds_differ() -> None:
    histories = [[SimulatedReplica(4, 4, seed).step() for _ in range(3)] for seed in (1, 2)]
    assert histories[0] != histories[1]


@given(replica=replicas, steps=ticks)
def test_rows_match_their_columns(replica: SimulatedReplica, steps: int) -> None:
    for _ in range(steps):
        replica.step()
    for name, state in replica.state().items():
        assert all(len(row) == len(COLUMNS[name]) for row in state)


def test_sizes_follow_workers_and_dataflows() -> None:
    state = SimulatedReplica(workers=3, dataflows=5, seed=7).state()
    assert len(state[COMPUTE_FRONTIERS]) == 15
    assert len(state[HYDRATION_STATUS]) == 5


def test_objects_become_hydrated() -> None:
    replica = SimulatedReplica(workers=2, dataflows=4, seed=3)
    for _ in range(100):
        replica.step()
    assert all(
        hydrated and took is not None for _, hydrated, took in replica.state()[HYDRATION_STATUS]
    )


def test_state_is_a_copy() -> None:
    replica = SimulatedReplica(seed=1)
    replica.state()[COMPUTE_FRONTIERS].clear()
    assert replica.state()[COMPUTE_FRONTIERS]


def test_large_snapshot_is_lazy_and_distinct() -> None:
    first = list(itertools.islice(large_snapshot(10**12), 5))
    assert len(first) == 5
    rows = list(large_snapshot(10_000))
    assert len(rows) == 10_000
    assert len({row for row, _ in rows}) == 10_000
    assert all(diff == 1 and len(row) == 5 for row, diff in rows)
