"""Epoch authority (pure): epochs below 1 or above the highest issued are refused."""

from __future__ import annotations

import pytest

from collection_manager.core.epochs import EpochAuthority, Issued, check_issued, claimed_replicas
from collection_manager.core.errors import EpochError, SchemaError
from collection_manager.core.filters import eq
from collection_manager.core.requests import (
    MAX_TTL_MS,
    Append,
    Delete,
    Fence,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    Request,
    epoch_claims,
    validate_request,
)
from tests.unit.strategies import FRONTIERS

SPECS = {FRONTIERS.name: FRONTIERS}
FORGED = 2**62
ROW = ("r1", "a", 0, 1)
R1_UP_TO_3 = EpochAuthority({"r1": Issued(3)})


def _fenced(replica: str, epoch: int) -> Delete:
    return Delete(FRONTIERS.name, eq("replica_id", replica), "removed", Fence(replica, epoch))


def test_claims_are_control_requests_and_fences() -> None:
    assert epoch_claims(Heartbeat("r1", 3, 10)) == (("r1", 3),)
    assert epoch_claims(ReplicaAdded("r1", 3)) == (("r1", 3),)
    assert epoch_claims(ReplicaRemoved("r1", 3)) == (("r1", 3),)
    assert epoch_claims(_fenced("r2", 4)) == (("r2", 4),)
    assert epoch_claims(Delete(FRONTIERS.name, eq("replica_id", "r1"))) == ()
    assert epoch_claims(Append(FRONTIERS.name, "r1", 9, (), 0)) == ()
    requests: list[Request] = [Heartbeat("r1", 1), _fenced("r2", 1), Append("c", "r3", 1, (), 0)]
    assert claimed_replicas(requests) == {"r1", "r2", "r3"}  # r3: its floor, for appends


@pytest.mark.parametrize(
    "request_",
    [
        Heartbeat("r1", FORGED),
        ReplicaAdded("r1", 4),
        ReplicaRemoved("r1", FORGED),
        _fenced("r1", 4),
    ],
)
def test_an_epoch_above_the_highest_issued_is_refused(request_: Request) -> None:
    epoch = epoch_claims(request_)[0][1]
    with pytest.raises(EpochError) as caught:
        check_issued(request_, R1_UP_TO_3)
    assert str(caught.value) == f"epoch {epoch} of replica r1 was never issued (highest issued: 3)"


def test_an_epoch_of_a_replica_never_added_is_refused() -> None:
    with pytest.raises(
        EpochError, match=r"epoch 1 of replica r9 was never issued \(highest issued: none\)"
    ):
        check_issued(Heartbeat("r9", 1), R1_UP_TO_3)


@pytest.mark.parametrize("epoch", [1, 2, 3])
def test_issued_epochs_pass(epoch: int) -> None:
    for request in (Heartbeat("r1", epoch), ReplicaRemoved("r1", epoch), _fenced("r1", epoch)):
        check_issued(request, R1_UP_TO_3)
    # Appends are judged by the fuse, not here.
    check_issued(Append(FRONTIERS.name, "r1", FORGED, (), 0), EpochAuthority({}))


_COLLECTED = (
    "belongs to an incarnation that was removed and collected after the retention "
    r"\(CM_REPLICA_RETENTION_MS\)"
)


@pytest.mark.parametrize(
    "request_",
    [
        Heartbeat("r1", 2),
        ReplicaRemoved("r1", 1),
        Append(FRONTIERS.name, "r1", 2, ((ROW, 1),), 0),
    ],
)
def test_requests_of_a_collected_incarnation_are_refused(request_: Request) -> None:
    """r1 was collected at epoch 2 and re-added at 5: its floor is 2."""
    authority = EpochAuthority({"r1": Issued(5, floor=2)}, collected=2)
    with pytest.raises(EpochError, match=rf"epoch \d of replica r1 {_COLLECTED}"):
        check_issued(request_, authority)
    check_issued(Heartbeat("r1", 3), authority)


def test_a_delete_fenced_at_a_collected_epoch_still_applies() -> None:
    """Its retractions are due in its partition's order; its fence kills nothing alive."""
    check_issued(_fenced("r1", 2), EpochAuthority({"r1": Issued(5, floor=2)}, collected=2))
    check_issued(_fenced("r9", 2), EpochAuthority({}, collected=2))


def test_appends_of_a_replica_without_record_are_refused_up_to_the_collected_epoch() -> None:
    authority = EpochAuthority({}, collected=7)
    with pytest.raises(EpochError, match=rf"epoch 7 of replica r9 {_COLLECTED}"):
        check_issued(Append(FRONTIERS.name, "r9", 7, (), 0), authority)
    check_issued(Append(FRONTIERS.name, "r9", 8, (), 0), authority)  # the fuse judges it


@pytest.mark.parametrize(
    "request_",
    [
        Heartbeat("r1", 0),
        ReplicaAdded("r1", -1),
        ReplicaRemoved("r1", -(2**63)),
        _fenced("r1", 0),
        Append(FRONTIERS.name, "r1", 0, ((ROW, 1),), 0),
    ],
)
def test_epochs_below_one_are_refused_on_the_wire(request_: Request) -> None:
    with pytest.raises(EpochError, match=r"epoch -?\d+ of replica r1 is below 1"):
        validate_request(request_, SPECS)


@pytest.mark.parametrize("ttl_ms", [0, -1, MAX_TTL_MS + 1, 2**63 - 1])
def test_a_ttl_outside_its_bound_is_refused_naming_it(ttl_ms: int) -> None:
    append = Append(FRONTIERS.name, "r1", 1, ((ROW, 1),), 0, ttl_ms=ttl_ms)
    with pytest.raises(SchemaError, match=rf"ttl_ms {ttl_ms} is outside 1\.\.{MAX_TTL_MS}"):
        validate_request(append, SPECS)
    for fine in (1, MAX_TTL_MS):
        validate_request(Append(FRONTIERS.name, "r1", 1, ((ROW, 1),), 0, ttl_ms=fine), SPECS)
