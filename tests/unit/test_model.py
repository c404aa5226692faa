"""The reference model: unit cases, and properties over random request streams."""

from __future__ import annotations

import dataclasses
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.filters import compile_filter, eq, in_
from collection_manager.core.requests import (
    Append,
    Delete,
    Fence,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    Request,
)
from tests.model.model import ModelStore
from tests.unit.strategies import (
    FRONTIERS,
    HYDRATION,
    MODEL_SPECS,
    model_streams,
    removal_histories,
)

SETTINGS = settings(max_examples=200, deadline=None)


def _append(replica: str, epoch: int, *updates: tuple[tuple[object, ...], int]) -> Append:
    return Append("frontiers", replica, epoch, updates, produced_at=0)  # type: ignore[arg-type]


def _row(replica: str, worker: int = 0) -> tuple[str, str, int, int]:
    return (replica, "a", worker, 1)


def test_append_then_delete_with_fence_drops_late_data() -> None:
    store = ModelStore(MODEL_SPECS)
    store.apply(_append("r1", 1, (_row("r1"), 1), (_row("r1", 1), 2)))
    store.apply(_append("r2", 1, (_row("r2"), 1)))
    store.apply(Delete("frontiers", eq("replica_id", "r1"), "removed", Fence("r1", 1)))
    store.apply(_append("r1", 1, (_row("r1"), 1)))  # late, in-flight data of the dead epoch
    store.apply(_append("r1", 2, (_row("r1", 2), 1)))  # the re-added replica
    frontiers = store.collection("frontiers")
    assert frontiers.state.rows() == {_row("r2"): 1, _row("r1", 2): 1}
    assert frontiers.counters.fused_appends == 1
    assert frontiers.counters.retractions == 2
    assert frontiers.counters.requests == 5
    assert frontiers.latest_time == 5
    assert frontiers.fences.as_dict() == {"r1": 1}
    assert frontiers.snapshot() == ({_row("r2"): 1, _row("r1", 2): 1}, 5)
    assert [(e.time, e.diff) for e in frontiers.tail(3)] == [(3, -1), (3, -2), (5, 1)]


def test_a_late_duplicate_removal_leaves_the_re_added_incarnation_s_rows() -> None:
    # Issue 42: another controller's removal of epoch 1 arrives after the replica was
    # removed (by its own add), added again at epoch 2, and appended.
    store = ModelStore(MODEL_SPECS)
    removal = Delete("frontiers", eq("replica_id", "r1"), "lease ended", Fence("r1", 1))
    store.apply(_append("r1", 1, (_row("r1"), 1)))
    store.apply(dataclasses.replace(removal, reason="re-added"))
    store.apply(_append("r1", 2, (_row("r1", 1), 1)))
    store.apply(removal)  # late: epoch 1 is fenced here already, so it retracts nothing
    frontiers = store.collection("frontiers")
    assert frontiers.state.rows() == {_row("r1", 1): 1}
    assert frontiers.counters.retractions == 1
    assert frontiers.latest_time == 4  # it still takes a time
    assert frontiers.fences.as_dict() == {"r1": 1}
    # The removal of epoch 2 itself retracts its rows.
    store.apply(Delete("frontiers", eq("replica_id", "r1"), "removed", Fence("r1", 2)))
    assert frontiers.state.rows() == {}
    assert frontiers.fences.as_dict() == {"r1": 2}


def _sums(appends: list[Append]) -> dict[object, int]:
    sums: Counter[object] = Counter()
    for append in appends:
        for row, diff in append.updates:
            sums[row] += diff
    return {row: total for row, total in sums.items() if total != 0}


@SETTINGS
@given(removal_histories())
def test_a_replica_holds_its_live_incarnation_s_rows_whatever_late_removals_come(
    history: tuple[list[Request], int | None],
) -> None:
    """A fence for epoch e retracts only rows of incarnations with epoch <= e: however late
    a duplicate removal arrives, the replica's rows are exactly its live incarnation's."""
    requests, live = history
    store = ModelStore(MODEL_SPECS)
    store.apply_all(requests)
    appends = [r for r in requests if isinstance(r, Append)]
    mine = [a for a in appends if a.replica_id == "r1" and a.epoch == live]
    others = [a for a in appends if a.replica_id == "r2"]
    assert store.collection("frontiers").state.rows() == _sums(mine) | _sums(others)


def test_invalid_retractions_are_counted_and_kept() -> None:
    store = ModelStore(MODEL_SPECS)
    store.apply(_append("r1", 1, (_row("r1"), -1)))
    store.apply(Delete("frontiers", eq("replica_id", "r1"), "removed", Fence("r1", 1)))
    store.apply(_append("r2", 1, (_row("r2"), -1)))
    store.apply(Append("frontiers", "r1", 2, ((_row("r1", 1), -1),), produced_at=0))
    frontiers = store.collection("frontiers")
    assert frontiers.state.negative_rows() == {_row("r2"): -1, _row("r1", 1): -1}
    assert frontiers.counters.invalid_retractions == 2  # r1 before its fence, and r2
    assert frontiers.counters.fenced_invalid_retractions == 1
    # A delete retracts negative rows too: afterwards they are gone.
    store.apply(Delete("frontiers", in_("replica_id", ["r1", "r2"])))
    assert frontiers.state.rows() == {}


def test_control_requests_track_membership_and_touch_no_collection() -> None:
    store = ModelStore(MODEL_SPECS)
    store.apply(ReplicaAdded("r1", 1))
    store.apply(Heartbeat("r1", 1, 50))
    store.apply(ReplicaRemoved("r1", 1))
    assert store.membership.live() == {}
    assert not any(c.fences.is_fenced("r1", 1) for c in store.collections.values())
    assert store.control_requests == 3
    assert store.collection("frontiers").upper == 1  # control requests write nothing


def test_unknown_collection_is_refused() -> None:
    store = ModelStore([FRONTIERS])
    with pytest.raises(UnknownCollectionError, match="unknown collection 'hydration'"):
        store.apply(Append("hydration", "r1", 1, (), produced_at=0))


def test_totals_sum_collections() -> None:
    store = ModelStore(MODEL_SPECS)
    store.apply(_append("r1", 1, (_row("r1"), 1)))
    store.apply(Append(HYDRATION.name, "r1", 1, ((("r1", True, None), 1),), produced_at=0))
    assert store.totals().updates == 2
    assert store.totals().requests == 2


def _run(requests: list[Request], grouped: bool) -> ModelStore:
    store = ModelStore(MODEL_SPECS)
    store.apply_all(requests, grouped=grouped)
    return store


def _log_sums(store: ModelStore, name: str) -> dict[object, int]:
    sums: Counter[object] = Counter()
    for entry in store.collection(name).log:
        sums[entry.row] += entry.diff
    return {row: total for row, total in sums.items() if total != 0}


@SETTINGS
@given(model_streams)
def test_grouped_application_equals_request_by_request(requests: list[Request]) -> None:
    one_by_one, grouped = _run(requests, False), _run(requests, True)
    for name, expected in one_by_one.collections.items():
        actual = grouped.collections[name]
        assert actual.state == expected.state
        assert actual.fences == expected.fences
        for counter in ("requests", "retractions", "fused_appends"):
            assert getattr(actual.counters, counter) == getattr(expected.counters, counter)
        assert actual.counters.updates <= expected.counters.updates
        # Either way, the change log is a faithful history of the state.
        assert _log_sums(one_by_one, name) == expected.state.rows()
        assert _log_sums(grouped, name) == actual.state.rows()
    assert grouped.membership.live() == one_by_one.membership.live()


def _with_ttls(requests: list[Request], ttls: list[int | None]) -> list[Request]:
    return [
        dataclasses.replace(r, ttl_ms=ttl) if isinstance(r, Append) else r
        for r, ttl in zip(requests, ttls, strict=False)
    ]


ttl_streams = st.builds(
    _with_ttls, model_streams, st.lists(st.sampled_from((None, 5, 9)), min_size=40, max_size=40)
)


@SETTINGS
@given(ttl_streams, st.integers(0, 12))
def test_rows_expire_alike_grouped_or_request_by_request(
    requests: list[Request], later: int
) -> None:
    """Each row's expiry, and what expires when the clock moves on, do not depend on
    merging: an append with a TTL merges only with its own source (core/planning.py)."""
    one_by_one, grouped = _run(requests, False), _run(requests, True)
    for name, expected in one_by_one.collections.items():
        assert grouped.collections[name].expiries == expected.expiries
        for row, at in expected.expiries.items():
            assert at in (5, 9) and expected.state.multiplicity(row) != 0
    one_by_one.retract_due(later)
    grouped.retract_due(later)
    for name, expected in one_by_one.collections.items():
        actual = grouped.collections[name]
        assert actual.state == expected.state
        assert actual.expiries == expected.expiries
        assert actual.counters.expirations == expected.counters.expirations
        assert all(at > later for at in expected.expiries.values())


def test_an_expired_row_is_retracted_whole_with_its_valid_until() -> None:
    store = ModelStore(MODEL_SPECS)
    row = ("r1", "c", 1, 5)
    store.apply(Append("frontiers", "r1", 1, ((row, 2),), 0, valid_until=50), now_ms=0)
    store.apply(Append("frontiers", "r1", 1, ((row, 1),), 0, ttl_ms=10), now_ms=5)
    frontiers = store.collection("frontiers")
    assert frontiers.expiries == {row: 15}
    store.retract_due(14)
    assert frontiers.state.multiplicity(row) == 3
    store.retract_due(15)
    assert frontiers.state.multiplicity(row) == 0 and frontiers.expiries == {}
    assert frontiers.counters.expirations == 1
    store.retract_due(50)  # its valid_until retraction went with it
    assert frontiers.counters.scheduled_retractions == 0
    assert [(e.row, e.diff) for e in frontiers.log] == [(row, 2), (row, 1), (row, -3)]


class _Fences:
    """The fences a stream sets, tracked independently of the model's ModelFences."""

    def __init__(self) -> None:
        self.dead: dict[tuple[str, str], int] = {}  # (collection, replica) -> dead epoch

    def fenced(self, append: Append) -> bool:
        return append.epoch <= self.dead.get((append.collection, append.replica_id), 0)

    def superseded(self, delete: Delete) -> bool:
        """Whether ``delete`` is fenced at an epoch its collection fences already."""
        fence = delete.fence
        if fence is None:
            return False
        return fence.epoch <= self.dead.get((delete.collection, fence.replica_id), 0)

    def record(self, request: Request) -> None:
        fences: list[tuple[str, str, int]] = []
        if isinstance(request, Delete) and request.fence is not None:
            fences = [(request.collection, request.fence.replica_id, request.fence.epoch)]
        for name, replica, epoch in fences:
            self.dead[(name, replica)] = max(epoch, self.dead.get((name, replica), 0))


def _check_delete(store: ModelStore, request: Delete, superseded: bool) -> None:
    collection = store.collection(request.collection)
    before, log_length = collection.state.rows(), len(collection.log)
    store.apply(request)
    if superseded:  # a late duplicate removal: the replica's rows are a newer incarnation's
        assert collection.state.rows() == before
        assert len(collection.log) == log_length
    else:
        matches = compile_filter(request.filter, collection.spec.column_names)
        assert not [row for row, _ in collection.state if matches(row)]


def _check_append(store: ModelStore, request: Append, fenced: bool) -> None:
    collection = store.collection(request.collection)
    before, log_length = collection.state.rows(), len(collection.log)
    store.apply(request)
    if fenced:
        assert collection.state.rows() == before
        assert len(collection.log) == log_length


@SETTINGS
@given(model_streams)
def test_request_by_request_invariants(requests: list[Request]) -> None:
    """After every delete no matching row remains, but a fenced delete of an epoch already
    fenced changes nothing; fenced appends never appear; each write advances the
    collection's upper by one."""
    store, fences = ModelStore(MODEL_SPECS), _Fences()
    for request in requests:
        if isinstance(request, Append):
            _check_append(store, request, fences.fenced(request))
            continue
        if isinstance(request, Delete):
            _check_delete(store, request, fences.superseded(request))
        else:
            store.apply(request)
        fences.record(request)
    for name, collection in store.collections.items():
        writes = [r for r in requests if isinstance(r, Append | Delete) and r.collection == name]
        assert collection.latest_time == len(writes) == collection.counters.steps
        assert all(1 <= e.time <= collection.latest_time for e in collection.log)
