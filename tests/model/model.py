"""The reference model: requests applied to in-memory collections, one step at a time.

This is the oracle the Redis store and the Spark consumer are tested against. It applies
requests exactly as the concept pages (docs/concepts/) say, with no I/O and no cleverness:

- ``Append``: the fuse first (a fenced epoch is dropped and counted), then the updates.
- ``Delete``: retract every matching row with its full multiplicity, then record the fence;
  a fenced delete of an epoch already fenced retracts nothing (a late duplicate removal).
- ``ReplicaAdded``/``ReplicaRemoved``/``Heartbeat``: membership only. A removal fences
  through the controller's fenced deletes, one per collection of its deployment, so a
  removal never touches another deployment's collections.

Every applied step of a collection (a request, or a merged ``AppendGroup``; a fused append
too) takes the time ``upper`` and advances ``upper`` by one, so the latest readable time is
``upper - 1`` (0: nothing applied yet). Control requests advance no collection's upper.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Sequence

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.numbers import in_domain
from collection_manager.core.planning import AppendGroup, DeleteStep, Step, consolidate, plan_groups
from collection_manager.core.requests import (
    Append,
    Delete,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    Request,
    Update,
)
from collection_manager.core.specs import CollectionSpec, Row
from tests.model.collection_state import (
    ApplyOutcome,
    CollectionState,
    delete_retractions,
)
from tests.model.membership import ModelFences, ModelMembership
from tests.model.validity_ledger import ValidityLedger

__all__ = [
    "CollectionModel",
    "CollectionState",
    "ModelCounters",
    "ModelLogEntry",
    "ModelStore",
    "consolidate",
    "delete_retractions",
    "plan_groups",
]


@dataclasses.dataclass
class ModelCounters:
    """What was applied to one collection; names match ``RedisStore.stats``.

    Attributes:
        requests: requests applied (a merged group counts the appends it merges).
        steps: write steps, each one tick of the collection's time.
        updates: non-zero updates written by appends.
        retractions: rows retracted by deletes.
        fused_appends: appends dropped by the fuse.
        scheduled_retractions: rows retracted because their ``valid_until`` passed.
        expirations: rows retracted because their TTL passed.
        invalid_retractions: updates that left a row negative, replica not fenced.
        fenced_invalid_retractions: the same where the row's replica is fenced.
        refused: appends refused whole, and due retractions dropped, because they would
            take a multiplicity out of the numeric domain (``core/numbers.py``).
    """

    requests: int = 0
    steps: int = 0
    updates: int = 0
    retractions: int = 0
    fused_appends: int = 0
    scheduled_retractions: int = 0
    expirations: int = 0
    invalid_retractions: int = 0
    fenced_invalid_retractions: int = 0
    refused: int = 0

    def add_outcome(self, outcome: ApplyOutcome) -> None:
        """Counts what applying a batch of updates did."""
        self.invalid_retractions += outcome.invalid_retractions
        self.fenced_invalid_retractions += outcome.fenced_invalid_retractions

    def as_dict(self) -> dict[str, int]:
        """The counters by name."""
        return dataclasses.asdict(self)


@dataclasses.dataclass(frozen=True)
class ModelLogEntry:
    """One change of a collection's change log."""

    time: int
    row: Row
    diff: int


class CollectionModel:
    """One collection: state, fences, time, change log and counters."""

    def __init__(self, spec: CollectionSpec) -> None:
        self.spec = spec
        self.state = CollectionState()
        self.fences = ModelFences()
        self.upper = 1
        self.log: list[ModelLogEntry] = []
        self.counters = ModelCounters()
        self.validity = ValidityLedger()
        self.expiries: dict[Row, int] = {}  # row TTL: row -> when it expires (ms)
        self.refused: list[Append] = []

    @property
    def latest_time(self) -> int:
        """The latest readable time, ``upper - 1``."""
        return self.upper - 1

    def snapshot(self) -> tuple[dict[Row, int], int]:
        """The contents and the time they are as of."""
        return self.state.rows(), self.latest_time

    def tail(self, since: int = 0) -> list[ModelLogEntry]:
        """Changes at times ``>= since``, oldest first."""
        return [entry for entry in self.log if entry.time >= since]

    def _tick(self, requests: int) -> int:
        time = self.upper
        self.upper += 1
        self.counters.steps += 1
        self.counters.requests += requests
        return time

    def _write(self, time: int, updates: Sequence[Update]) -> ApplyOutcome:
        outcome = self.state.apply(updates, self.fences)
        self.counters.add_outcome(outcome)
        self.log.extend(ModelLogEntry(time, row, diff) for row, diff in updates if diff != 0)
        for row, _ in updates:  # a row that left the collection has no TTL any more
            if self.state.multiplicity(row) == 0:
                self.expiries.pop(row, None)
        return outcome

    def _append_updates(
        self,
        time: int,
        replica: str,
        epoch: int,
        updates: Sequence[Update],
        valid_until: int | None,
        ttl_ms: int | None,
        now_ms: int,
    ) -> bool:
        if self.fences.is_fenced(replica, epoch):
            return False
        written = [(row, diff) for row, diff in updates if diff != 0]
        self.counters.updates += self._write(time, written).written
        if valid_until is not None:
            self.validity.add(valid_until, written)
        # The last append that names a row decides its TTL: every row it names that is in
        # the collection now expires ttl_ms from now, or, without a TTL, never.
        for row, _ in updates:
            if ttl_ms is None:
                self.expiries.pop(row, None)
            elif self.state.multiplicity(row) != 0:
                self.expiries[row] = now_ms + ttl_ms
        return True

    def overflows(self, parts: Iterable[tuple[str, int, Sequence[Update]]]) -> bool:
        """Whether applying the ``(replica, epoch, updates)`` parts in order would take a
        multiplicity out of the numeric domain (fused parts write nothing)."""
        pending: dict[Row, int] = {}
        for replica, epoch, updates in parts:
            if self.fences.is_fenced(replica, epoch):
                continue
            for row, diff in consolidate(updates):
                pending[row] = pending.get(row, self.state.multiplicity(row)) + diff
                if not in_domain(pending[row]):
                    return True
        return False

    def append(self, request: Append, now_ms: int = 0) -> None:
        """Applies an append at the consumer's clock ``now_ms``: dropped whole when its
        epoch is fenced, refused whole (no time passes) when it would take a multiplicity
        out of the numeric domain."""
        if self.overflows([(request.replica_id, request.epoch, request.updates)]):
            self.counters.refused += 1
            self.refused.append(request)
            return
        time = self._tick(1)
        r = request
        if not self._append_updates(
            time, r.replica_id, r.epoch, r.updates, r.valid_until, r.ttl_ms, now_ms
        ):
            self.counters.fused_appends += 1

    def append_group(self, group: AppendGroup, now_ms: int = 0) -> None:
        """Applies merged appends at one time; the fuse decides per part."""
        time = self._tick(group.requests)
        for p in group.parts:
            if not self._append_updates(
                time, p.replica_id, p.epoch, p.updates, p.valid_until, p.ttl_ms, now_ms
            ):
                self.counters.fused_appends += p.requests

    def retract_due(
        self,
        now_ms: int,
        ttl_clock_ms: int | None = None,
        only: Callable[[Row], bool] | None = None,
    ) -> None:
        """Retracts, at one new time, every row whose TTL expiry is ``<= ttl_clock_ms``
        (default ``now_ms``; whole, and its pending ``valid_until`` retractions with it),
        then every retraction whose ``valid_until`` is ``<= now_ms``. With ``only``, just
        those of the rows it accepts: the store times each bucket of a collection on its
        own (``core/buckets.py``), so one bucket's rows may expire before another's."""
        ttl_clock = now_ms if ttl_clock_ms is None else ttl_clock_ms
        expired = [
            row
            for row, at in self.expiries.items()
            if at <= ttl_clock and (only is None or only(row))
        ]
        self.validity.drop(expired)
        due = self.validity.due(now_ms, only)
        if not due and not expired:
            return
        time, kept, pending = self._tick(0), [], dict[Row, int]()
        self._write(time, [(row, -self.state.multiplicity(row)) for row in expired])
        self.counters.expirations += len(expired)
        for row, diff in due:
            after = pending.get(row, self.state.multiplicity(row)) + diff
            if in_domain(after):  # else dropped, as the store does
                kept.append((row, diff))
                pending[row] = after
        self._write(time, kept)
        self.counters.scheduled_retractions += len(kept)
        self.counters.refused += len(due) - len(kept)

    def delete(self, request: Delete) -> None:
        """Retracts every matching row, then records the fence, if any.

        A fenced delete of an epoch the collection fences already retracts nothing: that
        incarnation's removal was applied here before and the fuse drops its late appends
        since, so the replica's rows here are a newer incarnation's (a late duplicate of a
        removal, delivered after the replica was added again and appended).
        """
        time = self._tick(1)
        fence = request.fence
        if fence is not None and self.fences.is_fenced(fence.replica_id, fence.epoch):
            return
        retractions = delete_retractions(self.state, request.filter, self.spec.column_names)
        self._write(time, retractions)
        self.validity.drop(row for row, _ in retractions)
        self.counters.retractions += len(retractions)
        if request.fence is not None:
            self.fences.fence(request.fence.replica_id, request.fence.epoch)


class ModelStore:
    """Several collections and the replica membership, applied request by request.

    Args:
        specs: the collections; requests naming others raise ``UnknownCollectionError``.
    """

    def __init__(self, specs: Iterable[CollectionSpec]) -> None:
        self.collections = {spec.name: CollectionModel(spec) for spec in specs}
        self.membership = ModelMembership()
        self.control_requests = 0

    def collection(self, name: str) -> CollectionModel:
        """The model of collection ``name``.

        Raises:
            UnknownCollectionError: when there is no such collection.
        """
        if name not in self.collections:
            known = ", ".join(sorted(self.collections)) or "none"
            raise UnknownCollectionError(
                f"unknown collection {name!r}; known: {known}", collection=name
            )
        return self.collections[name]

    def apply(self, request: Request, now_ms: int = 0) -> None:
        """Applies one request at the consumer's clock ``now_ms``."""
        if isinstance(request, Append):
            self.collection(request.collection).append(request, now_ms)
        elif isinstance(request, Delete):
            self.collection(request.collection).delete(request)
        else:
            self._control(request)

    def apply_step(self, step: Step, now_ms: int = 0) -> None:
        """Applies one planned step (see :func:`plan_groups`)."""
        if isinstance(step, AppendGroup):
            self.collection(step.collection).append_group(step, now_ms)
        elif isinstance(step, DeleteStep):
            self.collection(step.request.collection).delete(step.request)
        else:
            self._control(step.request)

    def apply_all(
        self, requests: Sequence[Request], *, grouped: bool = False, now_ms: int = 0
    ) -> None:
        """Applies ``requests`` one by one, or planned into consolidated groups, at the
        consumer's clock ``now_ms``."""
        if grouped:
            for step in plan_groups(requests):
                if isinstance(step, AppendGroup) and self._group_overflows(step):
                    # As the store does: the group's appends one by one, at times of their own.
                    for request in requests[step.first_index : step.last_index + 1]:
                        if isinstance(request, Append) and request.collection == step.collection:
                            self.apply(request, now_ms)
                else:
                    self.apply_step(step, now_ms)
        else:
            for request in requests:
                self.apply(request, now_ms)

    def _group_overflows(self, group: AppendGroup) -> bool:
        parts = [(p.replica_id, p.epoch, p.updates) for p in group.parts]
        return self.collection(group.collection).overflows(parts)

    def _control(self, request: ReplicaAdded | ReplicaRemoved | Heartbeat) -> None:
        self.control_requests += 1
        if isinstance(request, ReplicaAdded):
            self.membership.added(request.replica_id, request.epoch)
        elif isinstance(request, ReplicaRemoved):
            self.membership.removed(request.replica_id, request.epoch)
        else:
            self.membership.heartbeat(request.replica_id, request.epoch, request.sent_at)

    def retract_due(self, now_ms: int, ttl_clock_ms: int | None = None) -> None:
        """Applies the retractions due at ``now_ms`` in every collection."""
        for collection in self.collections.values():
            collection.retract_due(now_ms, ttl_clock_ms)

    def totals(self) -> ModelCounters:
        """The counters summed over all collections."""
        total = ModelCounters()
        for collection in self.collections.values():
            for name, value in collection.counters.as_dict().items():
                setattr(total, name, getattr(total, name) + value)
        return total
