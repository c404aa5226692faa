"""Replica leases: who must be removed because no heartbeat came for ``replica_ttl`` (§8).

Pure logic over plain values (no clock, no I/O): the controller feeds it the active
members and the latest heartbeat it knows of each replica, and gets back which leases were
granted or renewed and which expired. Expiry uses the tight one-to-one TTL index, so a
lease renewed a thousand times still owns one index entry and a check costs what expires.

A heartbeat renews a lease when it is *new*: its mark (where the consumer saw it) differs
from the last one the table saw. The lease then runs from the controller's own ``now_ms``,
not from a timestamp in the heartbeat, so clock skew between agents, the consumer and the
controller cannot shorten or stretch a lease.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping

from collection_manager.core.ttl import OneToOneTtl


@dataclasses.dataclass(frozen=True)
class Beat:
    """The latest heartbeat known of one replica.

    Attributes:
        epoch: the incarnation that sent it.
        mark: anything that changes with every new heartbeat (the consumer's sequence).
    """

    epoch: int
    mark: Hashable


@dataclasses.dataclass(frozen=True)
class Lease:
    """One replica incarnation's lease.

    Attributes:
        replica_id: the replica.
        epoch: the incarnation holding the lease.
        expires_at: when it expires unless renewed (ms).
        renewed_at: when it was last granted or renewed (ms).
    """

    replica_id: str
    epoch: int
    expires_at: int
    renewed_at: int


@dataclasses.dataclass(frozen=True)
class _Held:
    epoch: int
    renewed_at: int
    mark: Hashable


class LeaseTable:
    """The leases of the active replica incarnations.

    Args:
        ttl_ms: how long a lease lasts after its last grant or renewal.
    """

    def __init__(self, ttl_ms: int) -> None:
        self.ttl_ms = ttl_ms
        # The TTL state decides expiry; ``_holders`` keeps what it hides once a lease is
        # past its expiry but not yet expired (a renewal arriving first must find it).
        self._ttl: OneToOneTtl[str, int] = OneToOneTtl()
        self._holders: dict[str, _Held] = {}

    def __len__(self) -> int:
        return self._ttl.primary_size

    def lease(self, replica_id: str) -> Lease | None:
        """The lease of ``replica_id``, expired or not, while the table holds it."""
        held = self._held(replica_id)
        expires_at = self._ttl.expires_at(replica_id)
        if held is None or expires_at is None:
            return None
        return Lease(replica_id, held.epoch, expires_at, held.renewed_at)

    def leases(self) -> list[Lease]:
        """Every lease held, earliest expiry first."""
        return [
            lease
            for _, replica_id in self._ttl.index_entries()
            if (lease := self.lease(replica_id)) is not None
        ]

    def grant(self, replica_id: str, epoch: int, now_ms: int, mark: Hashable = None) -> Lease:
        """Gives ``replica_id``'s incarnation ``epoch`` a full lease from ``now_ms``.

        Args:
            mark: the heartbeat mark already known; only a different one renews later.
        """
        self._ttl.put(replica_id, epoch, now_ms=now_ms, ttl_ms=self.ttl_ms)
        self._holders[replica_id] = _Held(epoch, now_ms, mark)
        return Lease(replica_id, epoch, now_ms + self.ttl_ms, now_ms)

    def heartbeat(self, replica_id: str, beat: Beat, now_ms: int) -> Lease | None:
        """Renews the lease when ``beat`` is new and from the lease's epoch.

        Returns:
            The renewed lease, or None when nothing changed (no lease, another epoch, or a
            heartbeat seen before).
        """
        held = self._held(replica_id)
        if held is None or beat.epoch != held.epoch or beat.mark == held.mark:
            return None
        return self.grant(replica_id, held.epoch, now_ms, beat.mark)

    def drop(self, replica_id: str) -> bool:
        """Forgets ``replica_id``'s lease (it was removed); returns whether one was held."""
        self._holders.pop(replica_id, None)
        return self._ttl.remove(replica_id)

    def sync(
        self, active: Mapping[str, int], beats: Mapping[str, Beat], now_ms: int
    ) -> list[Lease]:
        """Brings the table in line with the members, then applies new heartbeats.

        A member the table does not hold under its current epoch gets a full lease from
        ``now_ms`` (a controller that just started, or a re-added replica: no incarnation
        is removed for a silence that the table did not watch). Leases of replicas no longer
        active are dropped.

        Args:
            active: replica id -> epoch of every active member.
            beats: replica id -> the latest heartbeat known.
            now_ms: the controller's clock.

        Returns:
            The leases granted or renewed, for the caller to persist.
        """
        changed: list[Lease] = []
        for replica_id in [r for r in self._replica_ids() if r not in active]:
            self.drop(replica_id)
        for replica_id, epoch in active.items():
            held = self._held(replica_id)
            beat = beats.get(replica_id)
            if held is None or held.epoch != epoch:
                mark = None if beat is None else beat.mark
                changed.append(self.grant(replica_id, epoch, now_ms, mark))
            elif beat is not None and (renewed := self.heartbeat(replica_id, beat, now_ms)):
                changed.append(renewed)
        return changed

    def expire(self, now_ms: int) -> list[Lease]:
        """Removes and returns the leases expired at ``now_ms``, earliest first."""
        expired = []
        for replica_id, epoch in self._ttl.expire(now_ms):
            held = self._holders.pop(replica_id)
            expired.append(Lease(replica_id, epoch, held.renewed_at + self.ttl_ms, held.renewed_at))
        return expired

    @property
    def index_size(self) -> int:
        """Entries in the expiry index: never more than the leases held."""
        return self._ttl.index_size

    def _held(self, replica_id: str) -> _Held | None:
        return self._holders.get(replica_id)

    def _replica_ids(self) -> list[str]:
        return list(self._holders)
