"""Planning consolidated append groups between deletes."""

from __future__ import annotations

from collection_manager.core.filters import eq
from collection_manager.core.planning import (
    AppendGroup,
    ControlStep,
    DeleteStep,
    SourceUpdates,
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
                SourceUpdates("r1", 1, None, None, ((ROW2, 1),), 2),
                SourceUpdates("r2", 1, None, None, ((ROW2, 1),), 1),
            ),
        ),
        DeleteStep(5, requests[5]),  # type: ignore[arg-type]
        AppendGroup("b", 1, 1, (SourceUpdates("r1", 1, None, None, ((ROW1, 1),), 1),)),
        AppendGroup("a", 6, 6, (SourceUpdates("r1", 1, None, None, ((ROW1, 1),), 1),)),
    ]
    assert isinstance(steps[1], AppendGroup) and steps[1].requests == 3


def test_a_replica_removal_closes_every_group() -> None:
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
    assert kinds == [("AppendGroup", 0), ("AppendGroup", 1), ("ControlStep", 2), ("AppendGroup", 3)]


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
