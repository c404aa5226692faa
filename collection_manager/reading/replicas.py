"""What ``replicas list`` answers, as data: each replica's epoch, state, lease and heartbeat.

Read from Redis alone (the controller's member records and leases, and the consumer's
sightings of each replica): no Kafka producer is made, so a reader needs only Redis.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

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


def replicas_json(rows: Sequence[ReplicaStatus]) -> list[dict[str, Any]]:
    """Each replica as an object; its times are ms since the Unix epoch, or null."""
    return [
        {
            "replica_id": r.replica_id,
            "epoch": r.epoch,
            "state": r.state,
            "lease_expires_ms": r.lease_expires_at,
            "last_heartbeat_ms": r.last_heartbeat_at,
            "added_ms": r.added_at,
            "reason": r.reason,
        }
        for r in rows
    ]
