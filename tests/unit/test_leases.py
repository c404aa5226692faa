"""Replica leases (pure): grants, renewals by new heartbeats only, expiry, membership moves."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.control.leases import Beat, Lease, LeaseTable
from collection_manager.control.members import (
    ACTIVE,
    REMOVED,
    REMOVING,
    Member,
    added,
    begin_removal,
    finish_removal,
)

TTL = 3_000


def test_a_new_member_gets_a_full_lease_from_now() -> None:
    table = LeaseTable(TTL)
    changed = table.sync({"r1": 1}, {}, now_ms=1_000)
    assert changed == [Lease("r1", 1, 4_000, 1_000)]
    assert table.expire(3_999) == []
    assert table.expire(4_000) == [Lease("r1", 1, 4_000, 1_000)]
    assert len(table) == 0


def test_a_new_heartbeat_renews_and_a_seen_one_does_not() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, now_ms=0)
    assert table.sync({"r1": 1}, {"r1": Beat(1, "a")}, now_ms=1_000) == [
        Lease("r1", 1, 4_000, 1_000)
    ]
    # The same heartbeat seen again is no sign of life: no renewal.
    assert table.sync({"r1": 1}, {"r1": Beat(1, "a")}, now_ms=2_000) == []
    assert table.expire(4_000) == [Lease("r1", 1, 4_000, 1_000)]


def test_a_heartbeat_already_known_at_the_grant_does_not_renew() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {"r1": Beat(1, "old")}, now_ms=0)
    assert table.sync({"r1": 1}, {"r1": Beat(1, "old")}, now_ms=1_000) == []
    assert table.lease("r1") == Lease("r1", 1, 3_000, 0)


def test_a_heartbeat_of_another_epoch_does_not_renew() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 2}, {}, now_ms=0)
    assert table.sync({"r1": 2}, {"r1": Beat(1, "late")}, now_ms=1_000) == []
    assert table.expire(3_000) == [Lease("r1", 2, 3_000, 0)]


def test_renewals_keep_one_index_entry_per_replica() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1, "r2": 1}, {}, now_ms=0)
    for now in range(100, 10_000, 100):
        table.sync({"r1": 1, "r2": 1}, {"r1": Beat(1, now), "r2": Beat(1, now)}, now)
    assert table.index_size == len(table) == 2


def test_a_re_added_replica_gets_a_fresh_lease_for_its_new_epoch() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, now_ms=0)
    assert table.sync({"r1": 2}, {"r1": Beat(1, "x")}, now_ms=2_500) == [
        Lease("r1", 2, 5_500, 2_500)
    ]
    # The old epoch's expiry (3,000) is gone with its index entry: no early eviction.
    assert table.expire(3_000) == []
    assert table.expire(5_500) == [Lease("r1", 2, 5_500, 2_500)]


def test_leases_of_members_no_longer_active_are_dropped() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1, "r2": 1}, {}, now_ms=0)
    table.sync({"r2": 1}, {}, now_ms=10)
    assert [lease.replica_id for lease in table.leases()] == ["r2"]
    assert table.expire(10_000) == [Lease("r2", 1, 3_000, 0)]


def test_a_renewal_arriving_after_the_expiry_but_before_the_check_wins() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, now_ms=0)
    table.sync({"r1": 1}, {"r1": Beat(1, "late but alive")}, now_ms=5_000)
    assert table.expire(5_000) == []


operations = st.lists(
    st.tuples(
        st.sampled_from(["sync", "beat", "drop", "expire"]),
        st.sampled_from(["r1", "r2", "r3"]),
        st.integers(1, 3),
        st.integers(0, 2_000),
    ),
    max_size=60,
)


@settings(max_examples=200)
@given(operations)
def test_leases_against_a_simple_model(ops: list[tuple[str, str, int, int]]) -> None:
    table = LeaseTable(TTL)
    model: dict[str, tuple[int, int, object]] = {}  # replica -> (epoch, expires_at, mark)
    now = 0
    for op, replica, epoch, advance in ops:
        now += advance
        if op == "sync":
            table.sync({replica: epoch}, {}, now)
            held = model.get(replica)
            model = (
                {replica: held}
                if held and held[0] == epoch
                else {replica: (epoch, now + TTL, None)}
            )
        elif op == "beat" and replica in model:
            held_epoch, _, mark = model[replica]
            table.heartbeat(replica, Beat(held_epoch, now), now)
            if mark != now:
                model[replica] = (held_epoch, now + TTL, now)
        elif op == "drop":
            table.drop(replica)
            model.pop(replica, None)
        elif op == "expire":
            gone = {lease.replica_id for lease in table.expire(now)}
            assert gone == {r for r, (_, expires, _) in model.items() if expires <= now}
            model = {r: v for r, v in model.items() if r not in gone}
        assert table.index_size == len(table) == len(model)
        assert {lease.replica_id: lease.expires_at for lease in table.leases()} == {
            r: expires for r, (_, expires, _) in model.items()
        }


def test_an_add_never_overwrites_a_newer_epoch() -> None:
    newer = Member("r1", 3, ACTIVE, 100)
    assert added(newer, Member("r1", 2, ACTIVE, 200)) is None
    assert added(Member("r1", 2, REMOVED, 50), newer) == newer
    assert added(None, newer) == newer


def test_removal_moves_the_current_epoch_through_removing_to_removed() -> None:
    member = Member("r1", 2, ACTIVE, 100)
    removing = begin_removal(member, None, "lease expired")
    assert removing == Member("r1", 2, REMOVING, 100, None, "lease expired")
    assert finish_removal(removing, 2, now_ms=500) == Member(
        "r1", 2, REMOVED, 100, 500, "lease expired"
    )
    # A removal left half-way is resumed; a finished one is not repeated.
    assert begin_removal(removing, 2, "retry") is not None
    assert begin_removal(Member("r1", 2, REMOVED, 100, 500), None, "again") is None


def test_removal_of_an_older_epoch_leaves_the_new_incarnation_alone() -> None:
    member = Member("r1", 3, ACTIVE, 100)
    assert begin_removal(member, 2, "lease of epoch 2 expired") is None
    assert finish_removal(Member("r1", 3, REMOVING, 100), 2, now_ms=1) is None
    assert begin_removal(None, None, "unknown") is None
