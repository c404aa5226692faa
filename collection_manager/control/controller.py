"""The controller: replica membership, epochs, fenced removal, leases
(docs/concepts/epochs-and-fences.md, docs/concepts/leases-and-retention.md).

``add_replica`` issues a new epoch and announces it; ``remove_replica`` retracts the replica's rows
from every introspection collection with a fenced ``Delete`` (routed as ``removal.py`` tells) and
announces the removal; ``check_leases`` removes replicas whose heartbeats stopped for the TTL in log
time (docs/concepts/leases-and-retention.md) and publishes the ticks that move log time. Every
publish is flushed before the call returns: a caller that adds a replica after removing it can rely
on the retractions being ahead of the new incarnation's appends in each partition.

Beside it: the reads, in the base class ``ReplicaView`` (``replica_view.py``); what a removal sends,
which expired replicas a check removes and what retention deletes (``removal.py``); how requests are
published (``publishing.py``); the ticks (``ticks.py``), the lease table (``leases.py``) and the
member records (``members.py``).
"""

from __future__ import annotations

import collections
import logging
import math
import threading
import time
from collections.abc import Callable, Sequence

import redis

from collection_manager.config import ReplicaConfig
from collection_manager.config.errors import ConfigError
from collection_manager.control import metrics
from collection_manager.control.errors import CONTROLLER_FAULTS
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
from collection_manager.control.publishing import Placed, publish
from collection_manager.control.removal import (
    collect_removed,
    fenced_deletes,
    remove_expired,
    replica_units,
)
from collection_manager.control.replica_view import ReplicaView
from collection_manager.control.status import ReplicaStatus
from collection_manager.control.ticks import Ticker
from collection_manager.core.fences import Fence
from collection_manager.core.outages import OutageLog
from collection_manager.core.requests import ReplicaAdded, ReplicaRemoved
from collection_manager.core.specs import CollectionSpec
from collection_manager.core.ticks import TickClock, check_member_id
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.client import connected_client
from collection_manager.storage.replicas import ReplicaSnapshot
from collection_manager.storage.replication import Durability

logger = logging.getLogger(__name__)

__all__ = ["Controller", "ReplicaStatus", "now_ms"]


def now_ms() -> int:
    """Wall clock in ms since the Unix epoch."""
    return int(time.time() * 1000)


class Controller(ReplicaView):
    """Owns replica membership; its reads (statuses, live members, the replica
    collections) are :class:`ReplicaView`'s.

    Args:
        producer: publishes the control and delete requests (the controller's own).
        client: Redis, for epochs, members, leases, and the consumer's sightings and log
            times, all under ``config.replica_namespace``.
        topic: the requests topic.
        config: lease time to live and key namespace.
        collections: the introspection collections a removal retracts from; default the
            built-in ones with ``config.collection_suffix``.
        durability: the Redis replicas that must hold an epoch or a member change before
            the controller acts on it (``Durability.of`` the settings); none by default.
    """

    def __init__(
        self,
        producer: KafkaProducer,
        client: redis.Redis,
        topic: str,
        config: ReplicaConfig | None = None,
        collections: Sequence[str] | None = None,
        durability: Durability | None = None,
    ) -> None:
        config = config or ReplicaConfig()
        if config.replica_retention_ms < 1:
            raise ConfigError(
                f"CM_REPLICA_RETENTION_MS must be at least 1 ms, not {config.replica_retention_ms}"
            )
        super().__init__(client, topic, config, collections, durability)
        self._producer = producer
        self._leases = LeaseTable(self.config.replica_ttl_ms)
        self._clock = TickClock()
        self._ticker = Ticker(producer, self._members, topic)
        # The lease loop may run in a thread beside add/remove calls: one change at a time.
        self._lock = threading.RLock()
        self.last_check_ms: int | None = None  # when run_leases last checked them all

    @classmethod
    def connect(
        cls,
        bootstrap: str,
        redis_url: str,
        topic: str,
        config: ReplicaConfig | None = None,
        durability: Durability | None = None,
    ) -> Controller:
        """A controller with its own producer and Redis client."""
        # A socket timeout too: a paused Redis must not hang the lease loop for good.
        client = connected_client(redis_url, socket_connect_timeout=5, socket_timeout=10)
        producer = KafkaProducer(ProducerConfig(bootstrap, client_id="collection-manager-ctl"))
        return cls(producer, client, topic, config, durability=durability)

    def close(self) -> None:
        """Flushes and closes the producer."""
        self._producer.close()

    # Membership

    def add_replica(self, replica_id: str) -> int:
        """Adds a new incarnation of ``replica_id`` and returns its epoch.

        A replica that is still a member is removed first (rehydration): its rows are
        retracted and its epoch fenced before the new incarnation can publish.

        Raises:
            InvalidNameError: for an id outside the name rule (``core/names.py``), which
                the consumer would refuse, or the controller's reserved id.
        """
        check_member_id(replica_id)
        with self._lock:
            current = self._members.get(replica_id)
            if current is not None and current.state != REMOVED:
                self.remove_replica(replica_id, "re-added", epoch=current.epoch)
            epoch = self._members.next_epoch(replica_id)
            self._publish([(ReplicaAdded(replica_id, epoch), None)])
            at = now_ms()
            self._members.update(
                replica_id, lambda m: added(m, Member(replica_id, epoch, ACTIVE, at))
            )
            lease = self._leases.grant(replica_id, epoch, self._tick_time(self._log_times()))
            self._members.save_leases([lease])
            logger.info("added replica %s at epoch %d", replica_id, epoch)
            return epoch

    def remove_replica(
        self, replica_id: str, reason: str = "removed", epoch: int | None = None
    ) -> int | None:
        """Retracts ``replica_id``'s rows everywhere and fences its epoch.

        Args:
            replica_id: the replica.
            reason: why (recorded with the member and carried by the deletes).
            epoch: remove only this incarnation; None for the current one.

        Returns:
            The fenced epoch, or None when there was nothing to remove.

        Raises:
            ControllerError: when the requests were not acknowledged; the member stays
                ``removing`` and the lease loop retries.
        """
        with self._lock:
            member = self._members.update(replica_id, lambda m: begin_removal(m, epoch, reason))
            if member is None:
                return None
            fence = Fence(replica_id, member.epoch)
            deletes = fenced_deletes(
                self._declared, self.replica_collections(), replica_id, reason, fence
            )
            self._publish([*deletes, (ReplicaRemoved(replica_id, member.epoch), None)])
            at = now_ms()
            self._members.update(replica_id, lambda m: finish_removal(m, member.epoch, at))
            self._members.drop_lease(replica_id)
            self._leases.drop(replica_id)
            metrics.REMOVALS.inc()
            logger.info("removed replica %s epoch %d: %s", replica_id, member.epoch, reason)
            return member.epoch

    def declare_collections(self, specs: Sequence[CollectionSpec], source: str) -> list[str]:
        """Creates the collections of an agent's ``source`` that are missing, and records
        them, so that removals retract replicas' rows there too; returns the created ones.

        Raises:
            CollectionManagerError: when one exists in another shape, or over the bound.
        """
        return self._declared.declare(specs, source)

    # Leases

    def check_leases(self, wall_ms: int | None = None) -> list[str]:
        """Renews leases from new heartbeats, removes replicas whose lease expired, ticks.

        Expiry is judged in log time (docs/concepts/leases-and-retention.md): the newest tick the
        consumer applied in the replica's partition, read together with the sightings. Also finishes
        removals that failed half-way (members left ``removing``). Ends by publishing the tick whose
        time the leases granted or renewed here run from.

        Args:
            wall_ms: the controller's wall clock (ms), only a floor of the tick time;
                default the real one.

        Returns:
            The replicas removed by this check.
        """
        with self._lock:
            members = self._members.all()
            for member in members.values():
                if member.state == REMOVING:
                    self.remove_replica(member.replica_id, member.reason, member.epoch)
            active = {m.replica_id: m.epoch for m in members.values() if m.state == ACTIVE}
            snapshot = self._sightings.snapshot(self.topic)
            at = self._tick_time(snapshot.log_times, wall_ms)
            beats, partitions = _beats(snapshot, active)
            self._members.save_leases(self._leases.sync(active, beats, at, partitions))
            expired = self._leases.expire(snapshot.log_times)
            removed = remove_expired(expired, self.remove_replica, self.config.replica_ttl_ms)
            least = self._leases.least_left(snapshot.log_times)
            metrics.LEASE_LEFT_MIN.set(math.inf if least is None else least / 1000)
            due = now_ms() - self.config.replica_retention_ms  # removals then or before
            collect_removed(self._members, self._client, members.values(), due, self._units)
            published = self._ticker.tick(at)
            self._clock.published(published)
            if not published:
                metrics.TICKS_LOST.inc()
            states = collections.Counter(m.state for m in members.values())
            for state in metrics.STATES:
                metrics.REPLICAS.labels(state).set(states[state])
            return removed

    def _tick_time(self, log_times: dict[int, int], wall_ms: int | None = None) -> int:
        """A tick time above every tick applied: a lease from it counts only later ticks."""
        newest = max(log_times.values(), default=0)
        return self._clock.next(now_ms() if wall_ms is None else wall_ms, newest)

    def lease(self, replica_id: str) -> Lease | None:
        """The lease this controller's table holds for ``replica_id``, if any."""
        with self._lock:
            return self._leases.lease(replica_id)

    def run_leases(
        self,
        stop: threading.Event,
        interval_ms: int | None = None,
        went_round: Callable[[], None] = lambda: None,
    ) -> None:
        """Checks the leases every ``interval_ms`` until ``stop`` is set.

        A failed check (Kafka or Redis away) is logged and retried at the next interval.
        ``went_round`` is called after each check, failed or not (the loop's liveness).
        """
        interval = (interval_ms or self.config.lease_check_interval_ms) / 1000
        outage = OutageLog(logger, "lease check")
        while not stop.is_set():
            try:
                self.check_leases()
                outage.succeeded()
                self.last_check_ms = now_ms()
                metrics.CHECKS.inc()
                metrics.LAST_CHECK.set(self.last_check_ms / 1000)
            except CONTROLLER_FAULTS as exc:
                metrics.CHECK_FAILURES.inc()
                outage.failed(exc)
            went_round()
            stop.wait(interval)

    def _publish(self, requests: Sequence[Placed]) -> None:
        publish(self._producer, self.topic, requests)

    def _units(self) -> list[str]:
        return replica_units(self._declared, self.replica_collections())


def _beats(
    snapshot: ReplicaSnapshot, active: dict[str, int]
) -> tuple[dict[str, Beat], dict[str, int]]:
    """The active replicas' latest heartbeats, and the partitions of their control requests."""
    mine = {r: s for r, s in snapshot.sightings.items() if r in active}
    beats = {
        r: Beat(s.epoch, (s.partition, s.seq)) for r, s in mine.items() if s.kind == "heartbeat"
    }
    partitions = {r: s.partition for r, s in mine.items() if s.partition >= 0}
    return beats, partitions
