"""The demo's plan and what its view shows, without services."""

from __future__ import annotations

import pytest

from collection_manager.demo.frames import (
    KILL,
    REMOVE,
    SURVIVE,
    ConsumerView,
    Frame,
    Plan,
    ReplicaView,
    collection_table,
    progress_line,
    replica_table,
)

COLLECTIONS = ("compute_frontiers", "error_counts")


def test_three_replicas_one_survives_one_is_removed_one_is_killed() -> None:
    plan = Plan.of(replicas=3, duration_s=30, step_interval_ms=500)

    assert dict(plan.fates) == {"demo-r1": SURVIVE, "demo-r2": REMOVE, "demo-r3": KILL}
    assert (plan.survivors, plan.removed, plan.killed) == (["demo-r1"], "demo-r2", "demo-r3")
    assert plan.steps == 60
    assert 0 < plan.remove_at_s < plan.kill_at_s < plan.duration_s


def test_more_replicas_are_more_survivors() -> None:
    plan = Plan.of(replicas=5, duration_s=10, step_interval_ms=300)

    assert plan.survivors == ["demo-r1", "demo-r4", "demo-r5"]
    assert plan.steps == 34  # rounded up: the agents publish at least as long as asked


@pytest.mark.parametrize(("replicas", "duration_s"), [(2, 30.0), (3, 9.5)])
def test_too_few_replicas_or_too_short_is_refused(replicas: int, duration_s: float) -> None:
    with pytest.raises(ValueError, match="at least"):
        Plan.of(replicas, duration_s, 500)


def test_the_removal_and_then_the_kill_fall_due_once_each() -> None:
    plan = Plan.of(3, 20, 500)

    assert plan.due(plan.remove_at_s - 0.1, []) == []
    assert plan.due(plan.remove_at_s, []) == [REMOVE]
    assert plan.due(plan.kill_at_s, [REMOVE]) == [KILL]
    assert plan.due(plan.kill_at_s + 5, [REMOVE, KILL]) == []
    # A late tick carries out both.
    assert plan.due(plan.kill_at_s, []) == [REMOVE, KILL]


def _frame() -> Frame:
    replicas = [
        ReplicaView("demo-r1", "survives", "running", 3, "active", 4.25, {COLLECTIONS[0]: 8}),
        ReplicaView("demo-r2", "removed", "exited 1", 3, "removed", None, {}),
        ReplicaView("demo-r3", "to kill", "-", None, None, -0.4, {COLLECTIONS[1]: 2}),
    ]
    totals = {COLLECTIONS[0]: 10, COLLECTIONS[1]: 2}
    consumer = ConsumerView(batches=7, requests_per_s=12.4, lag=None, updates=99)
    return Frame(3.0, "running", COLLECTIONS, replicas, totals, consumer, ("  1.0s  x",))


def test_the_replicas_table_has_a_line_per_replica() -> None:
    headers, lines = replica_table(_frame())

    assert headers == ["replica", "fate", "process", "epoch", "state", "lease", "rows"]
    assert lines == [
        ["demo-r1", "survives", "running", "3", "active", "4.2s", "8"],
        ["demo-r2", "removed", "exited 1", "3", "removed", "-", "0"],
        ["demo-r3", "to kill", "-", "-", "-", "0.0s", "2"],
    ]


def test_the_collections_table_has_a_column_per_replica_and_the_totals_in_redis() -> None:
    headers, lines = collection_table(_frame())

    assert headers == ["collection", "demo-r1", "demo-r2", "demo-r3", "all replicas"]
    assert lines == [
        ["compute_frontiers", "8", "0", "0", "10"],
        ["error_counts", "0", "0", "2", "2"],
    ]


def test_the_plain_line_names_every_replica_and_the_lag() -> None:
    line = progress_line(_frame())

    assert line.startswith("   3.0s running | demo-r1 8 rows (active, running)")
    assert "demo-r3 2 rows (-, -)" in line
    assert line.endswith("lag -, 12 requests/s")
