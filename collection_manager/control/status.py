"""What ``replicas list`` shows of each replica: membership, lease and last heartbeat."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from collection_manager.control.leases import Lease
from collection_manager.control.members import ACTIVE, Member
from collection_manager.storage.replicas import ReplicaSighting


@dataclass(frozen=True)
class ReplicaStatus:
    """One line of ``replicas list``.

    Attributes:
        replica_id: the replica.
        epoch: its latest incarnation.
        state: ``active``, ``removing`` or ``removed``.
        lease_expires_at: the log time at which its lease expires unless renewed (ms;
            active only; near the controller's clock while the consumer keeps up).
        last_heartbeat_at: when its latest heartbeat of this epoch was sent (agent clock,
            ms) or, without one, applied by the consumer.
        added_at: when the incarnation was added (ms).
        reason: why it was removed.
    """

    replica_id: str
    epoch: int
    state: str
    lease_expires_at: int | None
    last_heartbeat_at: int | None
    added_at: int
    reason: str


def statuses(
    members: Mapping[str, Member],
    leases: Mapping[str, Lease],
    sightings: Mapping[str, ReplicaSighting],
) -> list[ReplicaStatus]:
    """One status per member, by replica id."""
    rows = []
    for replica_id, member in sorted(members.items()):
        lease = leases.get(replica_id)
        expires = (
            lease.expires_at
            if lease and lease.epoch == member.epoch and member.state == ACTIVE
            else None
        )
        rows.append(
            ReplicaStatus(
                replica_id=replica_id,
                epoch=member.epoch,
                state=member.state,
                lease_expires_at=expires,
                last_heartbeat_at=_heartbeat_at(sightings.get(replica_id), member.epoch),
                added_at=member.added_at,
                reason=member.reason,
            )
        )
    return rows


def _heartbeat_at(sighting: ReplicaSighting | None, epoch: int) -> int | None:
    if sighting is None or sighting.kind != "heartbeat" or sighting.epoch != epoch:
        return None
    return sighting.sent_at if sighting.sent_at is not None else sighting.seen_at
