"""The replica agent: introspection subscribes and heartbeats of a replica
(docs/concepts/sources.md, docs/concepts/epochs-and-fences.md).

An agent is created for a replica id and started with the epoch the controller issued
(``Controller.add_replica``); without an epoch nothing is published. Each introspection
collection has its own :class:`~producers.subscribe.Subscribe` (thread, token, producer),
which routes its requests by the collection's buckets as the catalog defines them;
a further thread sends ``Heartbeat`` requests keyed by the replica id, which renew the
replica's lease, and asks the controller (when given ``still_member``) whether the
incarnation is still a member, stopping the agent once it is not. Stopping cancels the
agent's token: every subscribe stops before its next batch and purges its queue.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping
from pathlib import Path

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.outages import OutageLog
from collection_manager.core.requests import Heartbeat
from collection_manager.core.shutdown import Cancelled, ShutdownToken
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.deliveries import DeliveryStats
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from producers.agent_config import AgentConfig
from producers.batching import PublishedState
from producers.routing import key_for
from producers.simulated import ERROR_COUNTS, HYDRATION_STATUS, Row
from producers.sources.simulated import simulated_sources
from producers.subscribe import Publishing, Source, Subscribe
from schemas.codec import encode_request

logger = logging.getLogger(__name__)

TTL_COLLECTIONS = frozenset({ERROR_COUNTS, HYDRATION_STATUS})
"""The collections whose rows carry the agent's ``row_ttl_ms``: a status that goes stale
when the replica stops reporting it (not sizes and frontiers, which the lease covers)."""

StillMember = Callable[[str, int], bool]
"""Asks the controller whether ``(replica_id, epoch)`` is the active incarnation."""


def now_ms() -> int:
    """Wall clock in ms since the Unix epoch."""
    return int(time.time() * 1000)


def save_state(path: Path, state: Mapping[str, Counter[Row]]) -> None:
    """Writes an agent's state (:meth:`ReplicaAgent.state`) as JSON, atomically.

    The format is ``{collection: [[row as a list, multiplicity], ...]}``; a reader never
    sees half a file, because it is renamed into place.
    """
    rows = {name: [[list(row), n] for row, n in counts.items()] for name, counts in state.items()}
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(rows))
    tmp.replace(path)


def load_state(path: Path) -> dict[str, Counter[Row]]:
    """The state :func:`save_state` wrote."""
    rows = json.loads(path.read_text())
    return {name: Counter({tuple(row): n for row, n in pairs}) for name, pairs in rows.items()}


def default_sources(config: AgentConfig, replica_id: str) -> dict[str, Source]:
    """The ``simulated`` source (:mod:`producers.sources.simulated`) with ``config``'s shape."""
    return simulated_sources(replica_id, config.workers, config.dataflows, config.seed)


class ReplicaAgent:
    """The agent of one replica.

    Args:
        replica_id: the replica.
        config: how it publishes.
        sources: source collection -> source; default :func:`default_sources`.
        expiring: the source collections whose rows carry ``config.row_ttl_ms``; default
            ``TTL_COLLECTIONS`` (those of the default sources).
        still_member: polled at every heartbeat; once it answers False the agent stops.
        clock: ms since the Unix epoch.
        producer_factory: makes each producer (tests pass one without a broker).
    """

    def __init__(
        self,
        replica_id: str,
        config: AgentConfig,
        sources: Mapping[str, Source] | None = None,
        expiring: Collection[str] = TTL_COLLECTIONS,
        still_member: StillMember | None = None,
        clock: Callable[[], int] = now_ms,
        producer_factory: Callable[[ProducerConfig], KafkaProducer] = KafkaProducer,
    ) -> None:
        self.replica_id = replica_id
        self._producer_factory = producer_factory
        self.config = config
        self.token = ShutdownToken(f"agent {replica_id}")
        self.epoch: int | None = None
        self._sources = (
            dict(sources) if sources is not None else default_sources(config, replica_id)
        )
        self._expiring = frozenset(expiring)
        self._still_member = still_member
        self._membership_outage = OutageLog(logger, f"asking whether {replica_id} is a member")
        self._clock = clock
        self._published = PublishedState([self._published_name(n) for n in self._sources])
        self._subscribes: list[Subscribe] = []
        self._heartbeat_token = self.token.child("heartbeats")
        self._heartbeat_producer = self._producer("heartbeats")
        self._heartbeat_thread = threading.Thread(
            target=self._heartbeats, name=f"heartbeats-{replica_id}"
        )

    def start(self, epoch: int, specs: Mapping[str, CollectionSpec] | None = None) -> None:
        """Starts the heartbeats and every subscribe, as incarnation ``epoch``.

        Args:
            epoch: the incarnation the controller issued.
            specs: the published collections' definitions as the catalog holds them
                (``Controller.collection_specs``), by published name: each subscribe
                routes its requests by its collection's buckets. A collection without
                one is taken to be unbucketed (keyed by its name).

        Raises:
            CollectionManagerError: when already started or ``epoch`` is not positive.
        """
        if self.epoch is not None or epoch < 1:
            raise CollectionManagerError(f"agent {self.replica_id}: cannot start at epoch {epoch}")
        self.epoch = epoch
        publishing = Publishing(
            self.replica_id,
            epoch,
            self.config.topic,
            self.config.batch_rows,
            self.config.step_interval_ms,
            self.config.max_steps,
            self._clock,
        )
        for name, source in self._sources.items():
            collection = self._published_name(name)
            ttl_ms = self.config.row_ttl_ms if name in self._expiring else 0
            subscribe = Subscribe(
                collection, source, name, publishing, self._producer(name),
                self.token.child(collection), self._published, self.stop, ttl_ms or None,
                spec=(specs or {}).get(collection),
            )  # fmt: skip
            self._subscribes.append(subscribe)
        self._heartbeat_thread.start()
        for subscribe in self._subscribes:
            subscribe.start()
        logger.info("agent %s started at epoch %d", self.replica_id, epoch)

    def stop(self, reason: str = "agent stopping") -> None:
        """Stops at once: no batch leaves after this, and queued ones are purged."""
        if not self.token.cancel(reason):
            return
        for subscribe in self._subscribes:
            subscribe.cancel(reason)
        self._heartbeat_producer.purge(reason)

    def join(self, timeout: float | None = None) -> None:
        """Waits for the agent's threads to end (those other than the caller's)."""
        for subscribe in self._subscribes:
            subscribe.join(timeout)
        thread = self._heartbeat_thread
        if thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until the agent stops or ``timeout`` seconds passed; returns whether stopped."""
        return self.token.wait(timeout)

    @property
    def stopped(self) -> bool:
        """Whether the agent was stopped (see :attr:`reason`)."""
        return self.token.cancelled

    @property
    def reason(self) -> str | None:
        """Why the agent stopped, or None while it runs."""
        return self.token.reason

    @property
    def settled(self) -> bool:
        """Whether every subscribe finished its ``max_steps`` and the broker has it all
        (those with a TTL go on refreshing)."""
        return bool(self._subscribes) and all(s.settled for s in self._subscribes)

    def state(self) -> dict[str, Counter[Row]]:
        """What the agent published and the broker acknowledged, per collection.

        Rows carry ``replica_id``; collections are named as published (with the suffix).
        """
        return self._published.state()

    def updates_delivered(self) -> dict[str, int]:
        """Per published collection, the non-zero updates the broker acknowledged."""
        return {s.collection: s.updates_delivered for s in self._subscribes}

    def stats(self) -> dict[str, DeliveryStats]:
        """Delivery counts of each subscribe's producer, by collection."""
        return {s.collection: s.producer.stats() for s in self._subscribes}

    def _published_name(self, source_collection: str) -> str:
        return source_collection + self.config.collection_suffix

    def _producer(self, purpose: str) -> KafkaProducer:
        client_id = f"cm-agent-{self.replica_id}-{purpose}"
        extra = self.config.producer_extra
        return self._producer_factory(ProducerConfig(self.config.bootstrap, client_id, extra=extra))

    def _heartbeats(self) -> None:
        assert self.epoch is not None
        interval_s = self.config.heartbeat_interval_ms / 1000
        try:
            while self._member():
                beat = Heartbeat(self.replica_id, self.epoch, self._clock())
                key = key_for(beat)  # the replica id: its control requests share a partition
                self._heartbeat_producer.produce(self.config.topic, key, encode_request(beat))
                if self._heartbeat_token.wait(interval_s):
                    return
            self.stop(f"replica {self.replica_id} epoch {self.epoch} is no longer a member")
        except Cancelled:
            pass
        except Exception as exc:  # without heartbeats the lease expires: say why, stop now
            logger.exception("heartbeats of %s failed", self.replica_id)
            self.stop(f"heartbeats failed: {exc!r}")
        finally:
            self._heartbeat_producer.purge("heartbeats stopped")
            self._heartbeat_producer.flush(1.0)  # the acknowledgements of those in flight

    def _member(self) -> bool:
        if self._still_member is None or self.epoch is None:
            return True
        try:
            member = self._still_member(self.replica_id, self.epoch)
        except Exception as exc:  # Redis away: keep going, the lease decides
            self._membership_outage.failed(exc)
            return True
        self._membership_outage.succeeded()
        return member
