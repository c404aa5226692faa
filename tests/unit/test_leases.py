"""Replica leases in log time (pure, manual clocks): grants, renewals, expiry, ticks."""

from __future__ import annotations

import pytest
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
from collection_manager.core.errors import InvalidNameError
from collection_manager.core.requests import Heartbeat
from collection_manager.core.ticks import (
    CONTROLLER_ID,
    TickClock,
    check_member_id,
    is_tick,
    newest_tick,
)

TTL = 3_000
P = 0  # the partition of r1 and r2 in these tests
ON_P = {"r1": P, "r2": P, "r3": P}


def test_a_new_member_gets_a_full_lease_from_the_tick_time() -> None:
    table = LeaseTable(TTL)
    changed = table.sync({"r1": 1}, {}, at=1_000, partitions=ON_P)
    assert changed == [Lease("r1", 1, 4_000, 1_000, P)]
    assert table.expire({P: 3_999}) == []
    assert table.expire({P: 4_000}) == [Lease("r1", 1, 4_000, 1_000, P)]
    assert len(table) == 0


def test_a_lease_expires_only_when_the_log_time_moves_not_when_checks_go_on() -> None:
    # The pipeline stopped: checks go on (tick times grow) but no tick is applied.
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, at=1_000, partitions=ON_P)
    for at in range(1_500, 60_000, 500):
        table.sync({"r1": 1}, {}, at=at, partitions=ON_P)
        assert table.expire({P: 1_000}) == []
    # Resumed: the consumer applies ticks; the silence now counts, in log time.
    assert table.expire({P: 3_999}) == []
    assert [lease.replica_id for lease in table.expire({P: 4_000})] == ["r1"]


def test_a_heartbeat_applied_after_the_pause_renews_before_the_log_time_passes() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, at=1_000, partitions=ON_P)
    # The consumer resumes and applies, in one chunk, the heartbeats and ticks sent during
    # the pause: the heartbeat renews at this check's tick time, above every applied tick.
    table.sync({"r1": 1}, {"r1": Beat(1, (P, 7))}, at=60_001, partitions=ON_P)
    assert table.expire({P: 60_000}) == []
    assert table.expire({P: 63_000}) == []
    assert table.expire({P: 63_001}) != []


def test_a_lease_without_a_known_partition_never_expires() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, at=0)
    assert table.expire({P: 10**9, 1: 10**9}) == []
    # Once the consumer applied a control request of it, its partition's log time counts.
    table.sync({"r1": 1}, {}, at=100, partitions={"r1": 1})
    assert table.expire({P: 10**9}) == []
    assert table.expire({1: 3_000}) == [Lease("r1", 1, 3_000, 0, 1)]


def test_each_lease_is_measured_in_its_own_partition() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1, "r2": 1}, {}, at=0, partitions={"r1": 0, "r2": 1})
    assert [lease.replica_id for lease in table.expire({0: 5_000, 1: 2_000})] == ["r1"]
    assert [lease.replica_id for lease in table.expire({1: 3_000})] == ["r2"]


def test_a_new_heartbeat_renews_and_a_seen_one_does_not() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, at=0, partitions=ON_P)
    assert table.sync({"r1": 1}, {"r1": Beat(1, "a")}, at=1_000, partitions=ON_P) == [
        Lease("r1", 1, 4_000, 1_000, P)
    ]
    # The same heartbeat seen again is no sign of life: no renewal.
    assert table.sync({"r1": 1}, {"r1": Beat(1, "a")}, at=2_000, partitions=ON_P) == []
    assert table.expire({P: 4_000}) == [Lease("r1", 1, 4_000, 1_000, P)]


def test_a_heartbeat_already_known_at_the_grant_does_not_renew() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {"r1": Beat(1, "old")}, at=0, partitions=ON_P)
    assert table.sync({"r1": 1}, {"r1": Beat(1, "old")}, at=1_000, partitions=ON_P) == []
    assert table.lease("r1") == Lease("r1", 1, 3_000, 0, P)


def test_a_heartbeat_of_another_epoch_does_not_renew() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 2}, {}, at=0, partitions=ON_P)
    assert table.sync({"r1": 2}, {"r1": Beat(1, "late")}, at=1_000, partitions=ON_P) == []
    assert table.expire({P: 3_000}) == [Lease("r1", 2, 3_000, 0, P)]


def test_renewals_keep_one_index_entry_per_replica() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1, "r2": 1}, {}, at=0)
    for at in range(100, 10_000, 100):
        beats = {"r1": Beat(1, at), "r2": Beat(1, at)}
        table.sync({"r1": 1, "r2": 1}, beats, at, partitions={"r1": at % 3, "r2": P})
    assert table.index_size == len(table) == 2


def test_a_re_added_replica_gets_a_fresh_lease_for_its_new_epoch() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, at=0, partitions=ON_P)
    assert table.sync({"r1": 2}, {"r1": Beat(1, "x")}, at=2_500, partitions=ON_P) == [
        Lease("r1", 2, 5_500, 2_500, P)
    ]
    # The old epoch's expiry (3,000) is gone with its index entry: no early eviction.
    assert table.expire({P: 3_000}) == []
    assert table.expire({P: 5_500}) == [Lease("r1", 2, 5_500, 2_500, P)]


def test_leases_of_members_no_longer_active_are_dropped() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1, "r2": 1}, {}, at=0, partitions=ON_P)
    table.sync({"r2": 1}, {}, at=10, partitions=ON_P)
    assert [lease.replica_id for lease in table.leases()] == ["r2"]
    assert table.expire({P: 10_000}) == [Lease("r2", 1, 3_000, 0, P)]


def test_a_renewal_arriving_after_the_expiry_but_before_the_check_wins() -> None:
    table = LeaseTable(TTL)
    table.sync({"r1": 1}, {}, at=0, partitions=ON_P)
    table.sync({"r1": 1}, {"r1": Beat(1, "late but alive")}, at=5_000, partitions=ON_P)
    assert table.expire({P: 5_000}) == []


def test_the_least_lease_left_is_the_earliest_expiry_against_its_partitions_log_time() -> None:
    table = LeaseTable(TTL)
    assert table.least_left({P: 0}) is None  # no lease held
    table.sync({"r1": 1, "r2": 1, "r3": 1}, {}, at=1_000, partitions={"r1": 0, "r2": 1})
    # r3's partition is not known: it cannot expire, so it has no lease left to count.
    assert table.least_left({0: 2_500, 1: 1_000}) == 1_500  # r1: 4,000 - 2,500
    assert table.least_left({0: 500, 1: 3_500}) == 500  # r2: 4,000 - 3,500
    assert table.least_left({1: 1_000}) == 3_000  # partition 0 has no log time yet
    assert table.least_left({5: 1_000}) is None
    # A renewal from this check's tick time: more than the TTL left until that tick applies.
    table.sync({"r1": 1, "r2": 1, "r3": 1}, {"r2": Beat(1, "b")}, at=3_000)
    assert table.least_left({0: 2_500, 1: 2_500}) == 1_500  # r1; r2 has 3,500
    assert [lease.replica_id for lease in table.expire({0: 4_000})] == ["r1"]
    assert table.least_left({0: 4_000, 1: 2_500}) == 3_500


def test_tick_times_never_go_back_and_stay_above_the_log() -> None:
    clock = TickClock()
    assert clock.next(1_000) == 1_000
    assert clock.next(900) == 1_001  # the wall clock was set back
    assert clock.next(2_000, log_time=5_000) == 5_001  # a controller behind the log


def test_the_tick_clock_stands_still_while_ticks_are_lost_and_goes_on_from_there() -> None:
    """A Kafka outage must not count: its heartbeats wait in the agents' producers."""
    clock = TickClock()
    assert clock.next(10_000) == 10_000
    clock.published(True)
    assert clock.next(10_500) == 10_500
    clock.published(False)  # Kafka is away from here
    assert clock.next(11_000) == 10_501
    clock.published(False)
    assert clock.next(40_000) == 10_502  # 30 s later: still standing
    clock.published(True)  # that one went through: the clock goes on from it
    assert clock.next(40_500) == 11_002
    clock.published(True)
    assert clock.next(41_500) == 12_002
    assert clock.next(41_000, log_time=20_000) == 20_001  # never behind the log


def test_ticks_are_heartbeats_of_the_reserved_id_only() -> None:
    tick = Heartbeat(CONTROLLER_ID, 1, 7_000)
    beat = Heartbeat("r1", 1, 9_000)
    assert is_tick(tick) and not is_tick(beat)
    assert newest_tick([beat, tick, Heartbeat(CONTROLLER_ID, 1, 6_000)]) == 7_000
    assert newest_tick([beat]) is None
    with pytest.raises(InvalidNameError, match="reserved"):
        check_member_id(CONTROLLER_ID)
    check_member_id("r1")


operations = st.lists(
    st.tuples(
        st.sampled_from(["sync", "beat", "drop", "expire", "stall"]),
        st.sampled_from(["r1", "r2", "r3"]),
        st.integers(1, 3),
        st.integers(0, 2_000),
    ),
    max_size=60,
)


@settings(max_examples=200)
@given(operations)
def test_leases_against_a_simple_model(ops: list[tuple[str, str, int, int]]) -> None:
    """Tick times ``at`` grow with every step; the log time follows only on ``expire``."""
    table = LeaseTable(TTL)
    model: dict[str, tuple[int, int, object]] = {}  # replica -> (epoch, expires_at, mark)
    at = log = 0
    for op, replica, epoch, advance in ops:
        at += advance + 1
        if op == "sync":
            table.sync({replica: epoch}, {}, at, ON_P)
            held = model.get(replica)
            model = (
                {replica: held} if held and held[0] == epoch else {replica: (epoch, at + TTL, None)}
            )
        elif op == "beat" and replica in model:
            held_epoch, _, mark = model[replica]
            table.heartbeat(replica, Beat(held_epoch, at), at)
            if mark != at:
                model[replica] = (held_epoch, at + TTL, at)
        elif op == "drop":
            table.drop(replica)
            model.pop(replica, None)
        elif op == "stall":  # the pipeline is away: the log time stays where it was
            assert table.expire({P: log}) == []
        elif op == "expire":
            log = at
            gone = {lease.replica_id for lease in table.expire({P: log})}
            assert gone == {r for r, (_, expires, _) in model.items() if expires <= at}
            model = {r: v for r, v in model.items() if r not in gone}
        assert table.index_size == len(table) == len(model)
        assert {lease.replica_id: lease.expires_at for lease in table.leases()} == {
            r: expires for r, (_, expires, _) in model.items()
        }
        left = [expires - log for _, expires, _ in model.values()]
        assert table.least_left({P: log}) == min(left, default=None)


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
