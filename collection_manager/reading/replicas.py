"""What ``replicas list`` answers, as data: each replica's epoch, state, lease and heartbeat.

Read from Redis alone (the controller's member records and leases, and the consumer's
sightings of each replica): no Kafka producer is made, so a reader needs only Redis.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from collection_manager.answers.models import Replica, ReplicaList
from collection_manager.control.members import REMOVED, MemberRecord
from collection_manager.control.status import ReplicaStatus, statuses
from collection_manager.storage.replicas import ReplicaRecord


def read_replicas(
    client: redis.Redis, namespace: str, removed: bool = False
) -> list[ReplicaStatus]:
    """The replicas of ``namespace`` by id: the live ones, and with ``removed`` also those
    removed that the retention still keeps (``replicas list --all``)."""
    members = MemberRecord(client, namespace)
    rows = statuses(members.all(), members.leases(), ReplicaRecord(client, namespace).all())
    return [r for r in rows if removed or r.state != REMOVED]


def replicas_of(rows: Sequence[ReplicaStatus], now_ms: int) -> tuple[Replica, ...]:
    """Each replica as read at ``now_ms``: its lease left is its expiry minus ``now_ms``
    (negative once past, None without a lease)."""
    return tuple(
        Replica(
            r.replica_id,
            r.epoch,
            r.state,  # type: ignore[arg-type]  # the members' states are the model's
            r.lease_expires_at,
            None if r.lease_expires_at is None else r.lease_expires_at - now_ms,
            r.last_heartbeat_at,
            r.added_at,
            r.reason,
        )
        for r in rows
    )


def replica_list(rows: Sequence[ReplicaStatus], namespace: str, now_ms: int) -> ReplicaList:
    """The replicas of ``namespace`` as read at ``now_ms``."""
    return ReplicaList(now_ms, namespace, replicas_of(rows, now_ms))
