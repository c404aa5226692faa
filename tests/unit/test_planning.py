"""Planning consolidated append groups between deletes."""

from __future__ import annotations

import itertools

from collection_manager.core.filters import eq
from collection_manager.core.planning import (
    MAX_GROUP_BYTES,
    MAX_GROUP_UPDATES,
    AppendGroup,
    ControlStep,
    DeleteStep,
    SourceUpdates,
    approximate_bytes,
    plan_groups,
)
from collection_manager.core.requests import Append, Delete, Heartbeat, ReplicaRemoved, Request

ROW1, ROW2 = ("r1", 1), ("r1", 2)


def _append(collection: str, replica: str, epoch: int, *updates: tuple[object, int]) -> Append:
    return Append(collection, replica, epoch, updates, produced_at=0)  # type: ignore[arg-type]


def test_appends_between_deletes_merge_per_source() -> None:
    requests: list[Request] = [
        _append("a", "r1", 1, (ROW1, 1)),
        _append("b", "r1", 1, (ROW1, 1)),
        _append("a", "r2", 1, (ROW2, 1)),
        _append("a", "r1", 1, (ROW1, -1), (ROW2, 1)),
        Heartbeat("r1", 1),
        Delete("a", eq("replica_id", "r1")),
        _append("a", "r1", 1, (ROW1, 1)),
    ]
    steps = plan_groups(requests)
    assert steps == [
        ControlStep(4, Heartbeat("r1", 1)),
        AppendGroup(
            "a",
            0,
            3,
            (
                # ROW1's diffs cancel: it stays as a zero diff, which writes nothing but
                # ends any TTL of ROW1, as the last append naming it would.
                SourceUpdates("r1", 1, None, None, ((ROW1, 0), (ROW2, 1)), 2),
                SourceUpdates("r2", 1, None, None, ((ROW2, 1),), 1),
            ),
        ),
        DeleteStep(5, requests[5]),  # type: ignore[arg-type]
        AppendGroup("b", 1, 1, (SourceUpdates("r1", 1, None, None, ((ROW1, 1),), 1),)),
        AppendGroup("a", 6, 6, (SourceUpdates("r1", 1, None, None, ((ROW1, 1),), 1),)),
    ]
    assert isinstance(steps[1], AppendGroup) and steps[1].requests == 3


def test_a_replica_removal_closes_no_group() -> None:
    # It touches no collection (the controller's fenced deletes do), so merging goes on.
    requests: list[Request] = [
        _append("a", "r1", 1, (ROW1, 1)),
        _append("b", "r1", 1, (ROW1, 1)),
        ReplicaRemoved("r1", 1),
        _append("a", "r1", 1, (ROW1, -1)),
    ]
    kinds = [
        (type(s).__name__, getattr(s, "first_index", getattr(s, "index", None)))
        for s in plan_groups(requests)
    ]
    assert kinds == [("ControlStep", 2), ("AppendGroup", 0), ("AppendGroup", 1)]


def test_expirations_are_separate_sources() -> None:
    requests: list[Request] = [
        Append("a", "r1", 1, ((ROW1, 1),), 0, valid_until=10),
        Append("a", "r1", 1, ((ROW1, -1),), 0),
    ]
    [group] = plan_groups(requests)
    assert isinstance(group, AppendGroup)
    assert [(p.valid_until, p.updates) for p in group.parts] == [
        (10, ((ROW1, 1),)),
        (None, ((ROW1, -1),)),
    ]


def test_an_append_with_a_ttl_merges_only_with_its_own_source() -> None:
    requests: list[Request] = [
        _append("a", "r1", 1, (ROW1, 1)),
        Append("a", "r1", 1, ((ROW1, 1),), 0, ttl_ms=50),
        Append("a", "r1", 1, ((ROW1, -1), (ROW2, 1)), 0, ttl_ms=50),
        Append("a", "r1", 1, ((ROW2, -1),), 0, ttl_ms=50),
        _append("a", "r1", 1, (ROW2, 1)),
    ]
    steps = plan_groups(requests)
    assert [(s.first_index, s.last_index) for s in steps] == [(0, 0), (1, 3), (4, 4)]  # type: ignore[union-attr]
    [part] = steps[1].parts  # type: ignore[union-attr]
    # Rows whose diffs cancel stay, with a zero diff: the group refreshes their TTL.
    assert (part.ttl_ms, part.updates) == (50, ((ROW1, 0), (ROW2, 0)))


def test_split_on_source_change_gives_one_part_per_group() -> None:
    requests: list[Request] = [
        _append("a", "r1", 1, (ROW1, 1)),
        _append("a", "r1", 1, (ROW1, 1)),
        _append("a", "r2", 1, (ROW2, 1)),
        _append("a", "r1", 1, (ROW1, 1)),
    ]
    steps = plan_groups(requests, split_on_source_change=True)
    assert [(s.first_index, s.last_index, len(s.parts)) for s in steps] == [  # type: ignore[union-attr]
        (0, 1, 1),
        (2, 2, 1),
        (3, 3, 1),
    ]


_SERIAL = itertools.count()


def _bulk(collection: str, updates: int, text: str = "") -> Append:
    # Rows no other call makes, so consolidation keeps every update.
    serial = next(_SERIAL)
    return _append(collection, "r1", 1, *((("r1", text, serial, i), 1) for i in range(updates)))


def _groups(steps: list[object]) -> list[tuple[int, int, int]]:
    return [
        (s.first_index, s.last_index, sum(len(p.updates) for p in s.parts))
        for s in steps
        if isinstance(s, AppendGroup)
    ]


def test_a_group_closes_before_it_would_pass_the_update_bound() -> None:
    third = MAX_GROUP_UPDATES // 3 + 1
    steps = plan_groups([_bulk("a", third), _bulk("b", 1), _bulk("a", third), _bulk("a", third)])
    assert _groups(steps) == [(0, 2, 2 * third), (1, 1, 1), (3, 3, third)]


def test_an_append_larger_than_the_bound_is_a_group_of_its_own() -> None:
    steps = plan_groups([_bulk("a", 1), _bulk("a", MAX_GROUP_UPDATES + 1), _bulk("a", 1)])
    assert _groups(steps) == [(0, 0, 1), (1, 1, MAX_GROUP_UPDATES + 1), (2, 2, 1)]


def test_a_group_closes_before_it_would_pass_the_byte_bound() -> None:
    big = "x" * (MAX_GROUP_BYTES // 100)  # 100 such rows are just over the bound
    requests = [_bulk("a", 60, big), _bulk("a", 60, big)]
    assert approximate_bytes(requests[0]) < MAX_GROUP_BYTES
    assert approximate_bytes(requests[0]) * 2 > MAX_GROUP_BYTES
    assert _groups(plan_groups(requests)) == [(0, 0, 60), (1, 1, 60)]
