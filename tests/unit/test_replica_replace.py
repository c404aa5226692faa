"""A second agent of a live replica: when its lease ended, and what the refusal says."""

from __future__ import annotations

from collection_manager.control.errors import ReplicaRunningError
from collection_manager.control.leases import Lease, lease_ended


def test_a_lease_ends_once_its_partition_s_log_time_reaches_its_expiry() -> None:
    lease = Lease("r1", 5, expires_at=1_000, renewed_at=0, partition=2)
    assert not lease_ended(lease, {2: 999})
    assert lease_ended(lease, {2: 1_000})
    assert not lease_ended(lease, {1: 5_000})  # its partition has no log time yet
    assert not lease_ended(Lease("r1", 5, 1_000, 0, None), {2: 5_000})  # placed nowhere yet


def test_the_refusal_names_the_epoch_its_last_heartbeat_and_lease_and_how_to_replace() -> None:
    error = ReplicaRunningError("r1", 5, 1_796_164_265_000, 1_796_164_280_000)
    assert str(error) == (
        "replica r1 already runs at epoch 5 (last heartbeat 2026-12-01 22:31:05 UTC, lease "
        "until 2026-12-01 22:31:20 UTC of log time); stop its agent first, or pass --replace "
        "to fence epoch 5 and run this one instead"
    )
    embedded = ReplicaRunningError("r1", 5, None, None, replace="replace=True")
    assert str(embedded) == (
        "replica r1 already runs at epoch 5 (no heartbeat yet); stop its agent first, or pass "
        "replace=True to fence epoch 5 and run this one instead"
    )
