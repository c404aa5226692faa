"""The public API for a replica that publishes its own collections (docs/howto/sources.md).

A replica process embeds :class:`EmbeddedReplica`: it declares its collections, starts
(which adds the replica and takes an epoch, as ``replicas run`` does), then either
publishes differential updates or hands over its current rows and lets the API compute
the difference. Everything else is the agent's (:mod:`producers.agent`): each collection's
subscribe publishes what was handed over at every step, heartbeats renew the lease, rows
of expiring collections carry the row TTL, and stopping cancels the shutdown token at once.

Rows are given without ``replica_id`` (the agent prepends it) and checked against the
declared columns when handed over, so a bad row is refused in the caller, not dead-lettered
later. What waits for the next step is bounded (``max_pending`` updates): a caller faster
than the steps is refused with the bound named, never buffered without end.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from types import TracebackType

from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, from_env
from collection_manager.config.services import running
from collection_manager.control.controller import Controller
from collection_manager.control.errors import ReplicaRunningError
from collection_manager.core.errors import CollectionManagerError, InfrastructureError
from collection_manager.core.specs import CollectionSpec, validate_row
from collection_manager.storage.replication import Durability
from producers.agent import ReplicaAgent
from producers.agent_config import AgentConfig
from producers.replica_process import ReplicaProcess
from producers.simulated import Row, Update, apply_updates
from producers.sources.plugin import SourceCollection
from producers.sources.shared import SharedSource

MAX_PENDING = 100_000
"""Updates handed over and not yet taken by a step, at most (per replica)."""


class PushSource:
    """A source fed by its caller: what was handed over since the last step.

    Args:
        replica_id: prepended to each row to check it against its collection's spec.
        specs: the declared collections, by name (before any suffix).
        max_pending: the bound on updates waiting for a step.
    """

    def __init__(
        self, replica_id: str, specs: Mapping[str, CollectionSpec], max_pending: int = MAX_PENDING
    ) -> None:
        self._replica_id = replica_id
        self._specs = dict(specs)
        self._max_pending = max_pending
        self._lock = threading.Lock()
        self._pending: dict[str, list[Update]] = {name: [] for name in specs}
        self._rows: dict[str, Counter[Row]] = {name: Counter() for name in specs}

    def publish(self, collection: str, updates: Iterable[Update]) -> None:
        """Hands over differential updates ``(row, diff)`` of ``collection``.

        Raises:
            CollectionManagerError: for an undeclared collection, a row that does not fit
                its columns, a retraction of a row it does not hold, or over the bound.
        """
        spec = self._spec(collection)
        changes = [(tuple(row), int(diff)) for row, diff in updates]
        for row, _ in changes:
            validate_row((self._replica_id, *row), spec)
        net: Counter[Row] = Counter()
        for row, diff in changes:
            net[row] += diff
        with self._lock:
            held = self._rows[collection]
            for row, diff in net.items():
                if held[row] + diff < 0:
                    raise CollectionManagerError(
                        f"{collection}: retracts {row!r} more often than it holds it"
                    )
            self._hand_over(collection, changes)
            apply_updates(held, changes)

    def set_rows(self, collection: str, rows: Iterable[Sequence[object]]) -> None:
        """Makes ``rows`` the whole current content of ``collection``: the difference to
        what was handed over before is published.

        Raises:
            CollectionManagerError: as :meth:`publish`.
        """
        spec = self._spec(collection)
        wanted: Counter[Row] = Counter(tuple(row) for row in rows)
        for row in wanted:
            validate_row((self._replica_id, *row), spec)
        with self._lock:
            held = self._rows[collection]
            changes = [(row, count - held[row]) for row, count in wanted.items()]
            changes += [(row, -count) for row, count in held.items() if row not in wanted]
            self._hand_over(collection, [(row, diff) for row, diff in changes if diff])
            self._rows[collection] = wanted

    def snapshot(self) -> dict[str, list[Update]]:
        """What was handed over before the agent started."""
        return self.step()

    def step(self) -> dict[str, list[Update]]:
        """What was handed over since the last step, and empties the queue."""
        with self._lock:
            taken = self._pending
            self._pending = {name: [] for name in self._specs}
            return taken

    def _spec(self, collection: str) -> CollectionSpec:
        if collection not in self._specs:
            raise CollectionManagerError(
                f"collection {collection!r} was not declared; declared: {sorted(self._specs)}"
            )
        return self._specs[collection]

    def _hand_over(self, collection: str, changes: list[Update]) -> None:
        waiting = sum(len(updates) for updates in self._pending.values())
        if waiting + len(changes) > self._max_pending:
            raise CollectionManagerError(
                f"{collection}: {waiting + len(changes)} updates would wait for the next step, "
                f"over the bound of {self._max_pending}: hand over less per step, or step "
                "more often (CM_STEP_INTERVAL_MS)"
            )
        self._pending[collection].extend(changes)


def _endpoints(bootstrap: str | None, redis_url: str | None) -> tuple[str, str]:
    """The given addresses, else the services the CLI's commands use: ``CM_KAFKA_BOOTSTRAP``
    and ``CM_REDIS_URL``, else the ones ``infra up`` recorded in the state directory.

    Raises:
        InfrastructureError: naming the missing service and how to give it.
    """
    if bootstrap and redis_url:
        return bootstrap, redis_url
    needs = [name for name, given in (("kafka", bootstrap), ("redis", redis_url)) if not given]
    try:
        found = running(from_env(InfraConfig), needs=needs)
    except InfrastructureError as exc:
        raise InfrastructureError(
            f"EmbeddedReplica: {exc} (or pass bootstrap= and redis_url=)"
        ) from exc
    return bootstrap or found.kafka_bootstrap, redis_url or found.redis_url


class EmbeddedReplica:
    """A replica process publishing its own collections.

    Example::

        from producers.embedded import EmbeddedReplica
        from producers.sources.plugin import SourceCollection, field

        queries = SourceCollection(
            "query_latency", (field("query", "string"), field("p99_ms", "double"))
        )
        with EmbeddedReplica("replica-7", [queries]) as replica:
            replica.set_rows("query_latency", [("q1", 12.5), ("q2", 3.0)])

    Args:
        replica_id: the replica (its rows carry it; its lease and epoch are its own).
        collections: what it publishes; missing collections are created.
        bootstrap: Kafka bootstrap servers; default ``CM_KAFKA_BOOTSTRAP``, else the broker
            ``infra up`` started, as the CLI's commands find it.
        redis_url: the Redis of the collections; default ``CM_REDIS_URL``, else the one
            ``infra up`` started.
        topic: the requests topic; default ``CM_TOPIC``.
        config: step interval, heartbeats, row TTL; default from the ``CM_*`` settings.
        replace: when the replica is a live member (an agent may run under its epoch),
            fence that epoch and run this one instead; by default :meth:`start` refuses.

    Raises:
        InfrastructureError: when no Kafka or Redis is given, configured or running; the
            message names the setting.
    """

    def __init__(
        self,
        replica_id: str,
        collections: Sequence[SourceCollection],
        bootstrap: str | None = None,
        redis_url: str | None = None,
        topic: str | None = None,
        config: ReplicaConfig | None = None,
        *,
        replace: bool = False,
    ) -> None:
        bootstrap, redis_url = _endpoints(bootstrap, redis_url)
        self.replica_id, self._replace = replica_id, replace
        self._config = config or from_env(ReplicaConfig)
        suffix = self._config.collection_suffix
        self._collections = tuple(collections)
        self._specs = [c.spec(suffix) for c in self._collections]
        self._source = PushSource(
            replica_id,
            {c.name: spec for c, spec in zip(self._collections, self._specs, strict=True)},
        )
        consumer = from_env(ConsumerConfig)
        self._controller = Controller.connect(
            bootstrap, redis_url, topic or consumer.topic, self._config, Durability.of(consumer)
        )
        names = [c.name for c in self._collections]
        self._agent = ReplicaAgent(
            replica_id,
            AgentConfig.of(self._config, bootstrap, self._controller.topic),
            sources=SharedSource(self._source, names).views(),
            expiring={c.name for c in self._collections if c.expires},
            still_member=self._controller.is_current,
        )
        self._process = ReplicaProcess(
            self._controller, replica_id, self._agent, self._specs, f"of replica {replica_id}"
        )

    @property
    def epoch(self) -> int | None:
        """Its epoch once started, else None."""
        return self._process.epoch

    def start(self) -> int:
        """Creates missing collections, adds the replica and starts publishing; its epoch.

        Raises:
            ReplicaRunningError: the replica is a live member, and not ``replace``.
        """
        try:
            self._controller.check_replaceable(self.replica_id, self._replace, "replace=True")
        except ReplicaRunningError:
            self._controller.close()  # nothing started: ``with`` calls no ``__exit__``
            raise
        self._process.declare()
        return self._process.start()

    def publish(self, collection: str, updates: Iterable[Update]) -> None:
        """Differential updates of ``collection``, published at the next step."""
        self._check_running()
        self._source.publish(collection, updates)

    def set_rows(self, collection: str, rows: Iterable[Sequence[object]]) -> None:
        """The whole current content of ``collection``; the difference is published."""
        self._check_running()
        self._source.set_rows(collection, rows)

    @property
    def stopped(self) -> bool:
        """Whether it stopped (see :attr:`reason`): removed, failed, or :meth:`stop`."""
        return self._agent.stopped

    @property
    def reason(self) -> str | None:
        """Why it stopped, or None while it runs."""
        return self._agent.reason

    def stop(self, reason: str = "replica stopping") -> None:
        """Stops at once, removes the replica (its rows are retracted) and disconnects."""
        try:
            self._process.stop(reason)
        finally:
            self._controller.close()

    def __enter__(self) -> EmbeddedReplica:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop("replica stopping" if error is None else f"replica failed: {error!r}")

    def _check_running(self) -> None:
        if self._agent.stopped:
            raise CollectionManagerError(f"replica {self.replica_id} stopped: {self._agent.reason}")
