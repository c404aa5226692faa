"""Replica leases in the log's time: who must be removed because no heartbeat came
(docs/concepts/leases-and-retention.md).

Pure logic over plain values (no clock, no I/O). Leases are measured in *log time*: the
time of the newest controller tick the consumer applied in a partition
(``core/ticks.py``), never in the wall clock. A lease lives on the partition that carries
its replica's control requests and expires only when that partition's log time passed its
last renewal plus the TTL. A stopped, lagging or disconnected pipeline applies no tick, so
its log time stands still and nobody's lease expires meanwhile; a lease whose partition is
not known yet (the consumer applied nothing of the replica) cannot expire at all.

A heartbeat renews a lease when it is *new*: its mark (where the consumer applied it)
differs from the last one the table saw. The lease then runs from ``at``, the time of the
tick the controller publishes after this check: that tick lies after the heartbeat in the
partition, so expiry needs ticks spanning the TTL after the heartbeat, all stamped by the
controller's one clock. Agents' and the consumer's clocks decide nothing.

Expiry uses one tight one-to-one TTL index per partition, so a lease renewed a thousand
times still owns one index entry and a check costs what expires.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping

from collection_manager.core.expiry_indexes import OneToOneTtl


@dataclasses.dataclass(frozen=True)
class Beat:
    """The latest heartbeat known of one replica.

    Attributes:
        epoch: the incarnation that sent it.
        mark: anything that changes with every new heartbeat (its partition and offset).
    """

    epoch: int
    mark: Hashable


@dataclasses.dataclass(frozen=True)
class Lease:
    """One replica incarnation's lease, in log time.

    Attributes:
        replica_id: the replica.
        epoch: the incarnation holding the lease.
        expires_at: the log time at which it expires unless renewed (ms).
        renewed_at: the tick time of its last grant or renewal (ms).
        partition: the partition whose log time it is measured in; None while unknown.
    """

    replica_id: str
    epoch: int
    expires_at: int
    renewed_at: int
    partition: int | None = None


def lease_ended(lease: Lease, log_times: Mapping[int, int]) -> bool:
    """Whether ``lease`` expired at its partition's log time (as :meth:`LeaseTable.expire`
    judges it): the lease loop removes its replica at its next check, if it has not yet."""
    if lease.partition is None or lease.partition not in log_times:
        return False
    return log_times[lease.partition] >= lease.expires_at


@dataclasses.dataclass(frozen=True)
class _Held:
    epoch: int
    renewed_at: int
    mark: Hashable
    partition: int | None


class LeaseTable:
    """The leases of the active replica incarnations.

    Args:
        ttl_ms: how much log time a lease lasts after its last grant or renewal.
    """

    def __init__(self, ttl_ms: int) -> None:
        self.ttl_ms = ttl_ms
        # One TTL state per partition decides expiry (the None one never expires);
        # ``_holders`` keeps what it hides once a lease is past its expiry but not yet
        # expired (a renewal arriving first must find it).
        self._ttl: dict[int | None, OneToOneTtl[str, int]] = {}
        self._holders: dict[str, _Held] = {}

    def __len__(self) -> int:
        return len(self._holders)

    def lease(self, replica_id: str) -> Lease | None:
        """The lease of ``replica_id``, expired or not, while the table holds it."""
        held = self._holders.get(replica_id)
        return None if held is None else self._lease(replica_id, held)

    def leases(self) -> list[Lease]:
        """Every lease held, earliest expiry first."""
        held = [self._lease(r, h) for r, h in self._holders.items()]
        return sorted(held, key=lambda lease: (lease.expires_at, lease.replica_id))

    def grant(
        self,
        replica_id: str,
        epoch: int,
        at: int,
        mark: Hashable = None,
        partition: int | None = None,
    ) -> Lease:
        """Gives ``replica_id``'s incarnation ``epoch`` a full lease from tick time ``at``.

        Args:
            mark: the heartbeat mark already known; only a different one renews later.
            partition: where its control requests go; None while unknown.
        """
        self._unindex(replica_id)
        self._index(partition).put(replica_id, epoch, now_ms=at, ttl_ms=self.ttl_ms)
        held = _Held(epoch, at, mark, partition)
        self._holders[replica_id] = held
        return self._lease(replica_id, held)

    def heartbeat(self, replica_id: str, beat: Beat, at: int) -> Lease | None:
        """Renews the lease from ``at`` when ``beat`` is new and from the lease's epoch.

        Returns:
            The renewed lease, or None when nothing changed (no lease, another epoch, or a
            heartbeat seen before).
        """
        held = self._holders.get(replica_id)
        if held is None or beat.epoch != held.epoch or beat.mark == held.mark:
            return None
        return self.grant(replica_id, held.epoch, at, beat.mark, held.partition)

    def place(self, replica_id: str, partition: int) -> None:
        """Measures ``replica_id``'s lease in ``partition``'s log time from now on."""
        held = self._holders.get(replica_id)
        if held is not None and held.partition != partition:
            self.grant(replica_id, held.epoch, held.renewed_at, held.mark, partition)

    def drop(self, replica_id: str) -> bool:
        """Forgets ``replica_id``'s lease (it was removed); returns whether one was held."""
        return self._unindex(replica_id)

    def sync(
        self,
        active: Mapping[str, int],
        beats: Mapping[str, Beat],
        at: int,
        partitions: Mapping[str, int] | None = None,
    ) -> list[Lease]:
        """Brings the table in line with the members, then applies new heartbeats.

        A member the table does not hold under its current epoch gets a full lease from
        ``at`` (a controller that just started, or a re-added replica: no incarnation is
        removed for a silence that the table did not watch). Leases of replicas no longer
        active are dropped.

        Args:
            active: replica id -> epoch of every active member.
            beats: replica id -> the latest heartbeat known.
            at: the time of the tick the controller publishes after this check.
            partitions: replica id -> the partition of its control requests, where known.

        Returns:
            The leases granted or renewed, for the caller to persist.
        """
        partitions = partitions or {}
        changed: list[Lease] = []
        for replica_id in [r for r in self._holders if r not in active]:
            self.drop(replica_id)
        for replica_id, epoch in active.items():
            held = self._holders.get(replica_id)
            beat = beats.get(replica_id)
            partition = partitions.get(replica_id)
            if held is None or held.epoch != epoch:
                mark = None if beat is None else beat.mark
                changed.append(self.grant(replica_id, epoch, at, mark, partition))
                continue
            if partition is not None:
                self.place(replica_id, partition)
            if beat is not None and (renewed := self.heartbeat(replica_id, beat, at)):
                changed.append(renewed)
        return changed

    def expire(self, log_times: Mapping[int, int]) -> list[Lease]:
        """Removes and returns the leases expired at their partitions' log times.

        Args:
            log_times: partition -> log time (ms); a partition missing here has none yet.

        Returns:
            The expired leases, earliest expiry first.
        """
        expired = []
        for partition, ttl in self._ttl.items():
            if partition is None or partition not in log_times:
                continue
            for replica_id, _ in ttl.expire(log_times[partition]):
                expired.append(self._lease(replica_id, self._holders.pop(replica_id)))
        return sorted(expired, key=lambda lease: (lease.expires_at, lease.replica_id))

    def least_left(self, log_times: Mapping[int, int]) -> int | None:
        """The least log time (ms) any lease held has left before it expires: its expiry
        minus its partition's log time, the earliest of each partition's index (one peek
        per partition, not one per lease). None when no lease can expire yet: none held,
        or none on a partition that has a log time. Below 0 only for a lease past its
        expiry that :meth:`expire` has not removed yet.
        """
        left = [
            earliest - log_times[partition]
            for partition, ttl in self._ttl.items()
            if partition is not None
            and partition in log_times
            and (earliest := ttl.earliest_expiry()) is not None
        ]
        return min(left, default=None)

    @property
    def index_size(self) -> int:
        """Entries in the expiry indexes: never more than the leases held."""
        return sum(ttl.index_size for ttl in self._ttl.values())

    def _lease(self, replica_id: str, held: _Held) -> Lease:
        expires_at = held.renewed_at + self.ttl_ms
        return Lease(replica_id, held.epoch, expires_at, held.renewed_at, held.partition)

    def _index(self, partition: int | None) -> OneToOneTtl[str, int]:
        return self._ttl.setdefault(partition, OneToOneTtl())

    def _unindex(self, replica_id: str) -> bool:
        held = self._holders.pop(replica_id, None)
        if held is None:
            return False
        self._index(held.partition).remove(replica_id)
        return True
