"""What the controller reads of its namespace's replicas, changing nothing: their member
records and statuses (``replicas list``), whether one is a live member an agent may still
run under (what ``--replace`` is asked for), and the replica collections a removal retracts
from.

:class:`ReplicaView` holds the namespace's records in Redis (members, declared collections,
the consumer's sightings and log times); :class:`~collection_manager.control.controller.Controller`
extends it with the changes: adding and removing replicas, the leases and the ticks. These
reads take no lock: each is one read of Redis, as current as that read.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from collection_manager.config import ReplicaConfig
from collection_manager.control.errors import ReplicaRunningError
from collection_manager.control.leases import lease_ended
from collection_manager.control.members import ACTIVE, Member, MemberRecord
from collection_manager.control.status import ReplicaStatus, statuses
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.declared import DeclaredCollections
from collection_manager.storage.replicas import ReplicaRecord
from collection_manager.storage.replication import Durability
from schemas.introspection import INTROSPECTION_COLLECTIONS


class ReplicaView:
    """The replicas of ``config.replica_namespace`` as Redis holds them.

    Args:
        client: Redis, for epochs, members, leases, and the consumer's sightings and log
            times, all under ``config.replica_namespace``.
        topic: the requests topic (whose log times judge a lease ended).
        config: the key namespace and the introspection collections' suffix.
        collections: the introspection collections a removal retracts from; default the
            built-in ones with ``config.collection_suffix``.
        durability: the Redis replicas that must hold an epoch or a member change before
            the controller acts on it (``Durability.of`` the settings); none by default.
    """

    def __init__(
        self,
        client: redis.Redis,
        topic: str,
        config: ReplicaConfig,
        collections: Sequence[str] | None = None,
        durability: Durability | None = None,
    ) -> None:
        self.config = config
        self.topic = topic
        self.collections = tuple(
            collections
            if collections is not None
            else (name + self.config.collection_suffix for name in INTROSPECTION_COLLECTIONS)
        )
        self._client = client
        self._members = MemberRecord(client, self.config.replica_namespace, durability)
        self._declared = DeclaredCollections(client, self.config.replica_namespace)
        self._sightings = ReplicaRecord(client, self.config.replica_namespace)

    def collection_specs(self, names: Sequence[str]) -> dict[str, CollectionSpec]:
        """The catalog's definitions of those of ``names`` that exist, with their buckets:
        what agents route their requests by (read once at their start: a live collection's
        buckets never change)."""
        return self._declared.catalog_specs(names)

    def replica_collections(self) -> tuple[str, ...]:
        """Where a removal retracts a replica's rows: the built-in introspection
        collections and those agents declared that still exist."""
        return tuple(dict.fromkeys([*self.collections, *self._declared.existing()]))

    def live_member(self, replica_id: str) -> ReplicaStatus | None:
        """``replica_id``'s status while it is a live member: active, and its lease not
        ended in log time (an agent may run under its epoch); None otherwise (never added,
        removed, being removed, or its lease ended and the lease loop removes it)."""
        member = self._members.get(replica_id)
        if member is None or member.state != ACTIVE:
            return None
        leases = self._members.leases()
        lease = leases.get(replica_id)
        ended = (
            lease is not None
            and lease.epoch == member.epoch
            and lease_ended(lease, self._log_times())
        )
        if ended:
            return None
        return statuses({replica_id: member}, leases, self._sightings.all())[0]

    def check_replaceable(
        self, replica_id: str, replace: bool, option: str = "--replace"
    ) -> ReplicaStatus | None:
        """Before :meth:`Controller.add_replica` of a process that runs an agent: the live member it
        would fence, if any (only with ``replace``).

        Raises:
            ReplicaRunningError: when ``replica_id`` is a live member and not ``replace``;
                its message names ``option``, the way to replace it.
        """
        running = self.live_member(replica_id)
        if running is not None and not replace:
            raise ReplicaRunningError(
                replica_id,
                running.epoch,
                running.last_heartbeat_at,
                running.lease_expires_at,
                option,
            )
        return running

    def member(self, replica_id: str) -> Member | None:
        """The membership record of ``replica_id``."""
        return self._members.get(replica_id)

    def is_current(self, replica_id: str, epoch: int) -> bool:
        """Whether ``epoch`` is ``replica_id``'s active incarnation (agents poll this)."""
        member = self._members.get(replica_id)
        return member is not None and member.epoch == epoch and member.state == ACTIVE

    def replicas(self) -> list[ReplicaStatus]:
        """Every replica the controller knows, by id."""
        members = self._members.all()
        return statuses(members, self._members.leases(), self._sightings.all())

    def _log_times(self) -> dict[int, int]:
        return self._sightings.snapshot(self.topic).log_times
