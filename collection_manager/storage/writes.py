"""The writer of storage collections: atomic, exactly-once apply, retractions when due,
the expiration, the cut's settling and the refused appends, each a call of the Lua
function library (``functions.lua``) by the specs of the catalog (``catalog.py``)."""

from __future__ import annotations

import collections
import time
from collections.abc import Sequence
from typing import Any

import redis

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.planning import MAX_GROUP_UPDATES
from collection_manager.core.requests import collection_of, unit_of, validate_request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.client import as_text
from collection_manager.storage.cut import SettleResult, settle
from collection_manager.storage.errors import STRADDLES, StorageError, WatermarkMovedError
from collection_manager.storage.keys import CollectionKeys, watermark_field, watermark_topic
from collection_manager.storage.library import APPLY, CONTINUE, DUE, HORIZON, call
from collection_manager.storage.ops import DeleteOp, FunctionCall, Op, chunk_ops, function_call
from collection_manager.storage.planning import OffsetRequest, plan_ops, without_refused
from collection_manager.storage.replication import Durability
from collection_manager.storage.replies import (
    Refusal,
    add,
    counters,
    is_done,
    is_held,
    refusal_or_counters,
)

# How many candidate rows a delete may look at in one function call; a larger delete is
# done in steps of this many (docs/concepts/deletes.md). bench/reader_latency.py, during a delete
# of 1M rows on 2 shared cores: a separate reader's p99 was 13 ms with steps of 100 (about
# 1.4 ms of Redis each), 76 ms with 200 and worse with 1,000; the delete took 22 s, 19 s.
DELETE_STEP_ROWS = 100


def wall_clock_ms() -> int:
    """The consumer's clock: this machine's, in ms since the Unix epoch
    (docs/concepts/ttl-and-expiration.md)."""
    return time.time_ns() // 1_000_000


def _layout_call(spec: CollectionSpec) -> FunctionCall:
    return function_call([], spec)


class StoreWriter:
    """Writes the collections of one Redis (or one Redis Cluster slot per collection).

    Args:
        client: a Redis client; responses must not be decoded (rows are compared as bytes).
        catalog: the specs it writes by (default: its own of ``client``).
        log_max_length: approximate number of change-log entries kept per collection.
        chunk_updates: about how many updates one function call applies, so that no single
            call blocks Redis for long; chunks split between request groups, never inside
            one (a group holds at most ``MAX_GROUP_UPDATES``).
        delete_step_rows: how many candidate rows one call of a delete looks at; a delete
            with more is done in several calls, while readers see it whole.
    """

    def __init__(
        self,
        client: redis.Redis,
        catalog: Catalog | None = None,
        log_max_length: int = 1_000_000,
        chunk_updates: int = MAX_GROUP_UPDATES,
        delete_step_rows: int = DELETE_STEP_ROWS,
    ) -> None:
        self._client = client
        self.catalog = Catalog(client) if catalog is None else catalog
        self._log_max_length = log_max_length
        self._chunk_updates = chunk_updates
        self._delete_step_rows = delete_step_rows

    def applied_offset(self, collection: str, topic: str, partition: int) -> int:
        """The highest Kafka offset of ``(topic, partition)`` applied to ``collection``, or -1."""
        raw = self._client.hget(
            CollectionKeys(collection).applied, watermark_field(topic, partition)
        )
        return -1 if raw is None else int(raw)

    def written_from(self, collection: str, topic: str) -> bool:
        """Whether requests of ``topic`` were ever applied to ``collection``.

        One ``HKEYS`` of its watermarks, which hold a field per topic partition that wrote
        it (a few), however many rows it has.
        """
        fields = self._client.hkeys(CollectionKeys(collection).applied)
        return any(watermark_topic(as_text(field)) == topic for field in fields)

    def apply(
        self,
        collection: str,
        topic: str,
        partition: int,
        ops: Sequence[Op],
        requests: Sequence[OffsetRequest] = (),
        now_ms: int | None = None,
    ) -> dict[str, int]:
        """Applies planned operations atomically per operation, exactly once.

        Operations at or below the applied offset of ``(topic, partition)`` are skipped, so
        applying the same operations again (a replayed batch) changes nothing. An append
        that would take a multiplicity out of the numeric domain is refused whole (see
        :func:`split_refused`; ``requests`` are those the ops were planned from) and left
        in the collection's ``refused`` hash for :meth:`take_refused`. Rows of appends with
        a TTL expire ``ttl_ms`` after ``now_ms`` (default: this machine's clock).

        Returns:
            Counters of what was done (requests, updates, retractions, fused_appends, ...).
        """
        now_ms = wall_clock_ms() if now_ms is None else now_ms
        spec = self.catalog.spec(collection)
        totals: dict[str, int] = {}
        chunks = collections.deque(chunk_ops(ops, self._chunk_updates))
        while chunks:
            chunk = chunks.popleft()
            arguments = function_call(chunk, spec, self._delete_step_rows, now_ms)
            reply = self._run(APPLY, spec, arguments, watermark_field(topic, partition))
            if isinstance(reply, Refusal):
                # Nothing of the chunk was written: replace the op at fault and run it again.
                chunks.appendleft(
                    without_refused(chunk, reply.index, reply.row, reply.value, requests, spec)
                )
                continue
            if isinstance(chunk[-1], DeleteOp):  # it may have left a delete in progress
                reply = add(reply, self._finish_delete(spec))
            totals = add(totals, reply)
        return totals

    def finish_deletes(self) -> None:
        """Finishes every collection's delete in progress (one a stopped consumer left).

        Writes finish one before they write; this makes the delete's time readable without
        waiting for the collection's next write.
        """
        for spec in self.catalog.unit_specs():
            self._finish_delete(spec)

    def _finish_delete(self, spec: CollectionSpec) -> dict[str, int]:
        """Runs ``cm_continue`` until the collection has no delete in progress; its counters."""
        totals: dict[str, int] = {}
        while True:
            state, *more = self._call(CONTINUE, spec, _layout_call(spec), self._delete_step_rows)
            totals = add(totals, counters(more))
            if is_done(state):
                return totals

    def _held_off(
        self, function: str, spec: CollectionSpec, given: FunctionCall, own: object
    ) -> Any:
        """Calls a writing function; while a delete is in progress, finishes it first."""
        reply = self._call(function, spec, given, own)
        while is_held(reply):
            self._finish_delete(spec)
            reply = self._call(function, spec, given, own)
        return reply

    def _run(self, function: str, spec: CollectionSpec, given: FunctionCall, own: object) -> Any:
        """Calls a writing function (``_held_off``); its refusal or its counters."""
        return refusal_or_counters(self._held_off(function, spec, given, own))

    def _call(self, function: str, spec: CollectionSpec, given: FunctionCall, own: object) -> Any:
        keys = CollectionKeys(spec.name)
        args = [keys.index_prefix, self._log_max_length, given.payload, own, *given.texts]
        try:
            return call(self._client, function, keys.function_keys(), args)
        except redis.ResponseError as exc:
            error = WatermarkMovedError if STRADDLES in str(exc) else StorageError
            raise error(f"writing to {spec.name} failed: {exc}", collection=spec.name) from exc

    def retract_due(
        self, collection: str, now_ms: int, ttl_clock_ms: int | None = None
    ) -> dict[str, int]:
        """Retracts the rows whose TTL expiry is ``<= ttl_clock_ms`` (default ``now_ms``;
        0 expires none) and those whose ``valid_until`` is ``<= now_ms``: at one new time
        per ``DUE_STEP_ROWS`` of them, so no call holds Redis for long.

        The consumer passes its own TTL clock: when the latest batch that read everything in Kafka
        began (docs/concepts/ttl-and-expiration.md), so that a refresh still waiting there counts.
        Idempotent: each scheduled retraction leaves the schedule as it is applied.
        """
        spec = self.catalog.spec(collection)
        ttl_clock = now_ms if ttl_clock_ms is None else ttl_clock_ms
        given = function_call([], spec, now_ms=ttl_clock)
        totals: dict[str, int] = {}
        while True:  # in calls of at most DUE_STEP_ROWS rows, each at its own time
            state, *more = self._held_off(DUE, spec, given, now_ms)
            totals = add(totals, counters(more))
            if is_done(state):
                return totals

    def set_expiration(self, collection: str, expiration_ms: int | None) -> int:
        """Sets the expiration and rebuilds the schedule for it; returns the schedule's size.

        Retractions at or after the expiration are kept in the ledger, not the schedule;
        call this again (with a later expiration) before the clock reaches it.
        """
        spec = self.catalog.spec(collection)
        argument = "" if expiration_ms is None else expiration_ms
        return int(self._run(HORIZON, spec, _layout_call(spec), argument))

    def apply_requests(
        self,
        topic: str,
        partition: int,
        requests: Sequence[OffsetRequest],
        validated: bool = False,
        now_ms: int | None = None,
    ) -> dict[str, dict[str, int]]:
        """Applies one partition's requests (offset order) exactly once; counters per collection.

        Appends between deletes are merged and consolidated; requests a previous run
        applied are left out. Control requests do not touch collections.

        Args:
            validated: the caller already checked every request against the catalog (the
                consumer does, to dead-letter bad ones); otherwise they are checked here,
                all before anything is written.
            now_ms: the consumer's clock, from which rows appended with a TTL expire
                (default: this machine's clock).

        Raises:
            UnknownCollectionError: for a request naming a collection nobody created.
            SchemaError: for a row that does not fit its collection (nothing is written).
            FilterError: for an invalid delete filter (nothing is written).
        """
        if not validated:
            self._validate(topic, partition, requests)
        units = {u for _, r in requests if (u := unit_of(r)) is not None}
        specs = {unit: self.catalog.spec(unit) for unit in units}
        applied = {name: self.applied_offset(name, topic, partition) for name in specs}
        return {
            name: self._apply_ahead(name, topic, partition, ops, requests, specs, applied, now_ms)
            for name, ops in plan_ops(requests, specs, applied).items()
        }

    def _apply_ahead(
        self,
        name: str,
        topic: str,
        partition: int,
        ops: Sequence[Op],
        requests: Sequence[OffsetRequest],
        specs: dict[str, CollectionSpec],
        applied: dict[str, int],
        now_ms: int | None,
    ) -> dict[str, int]:
        """Applies ``ops`` to ``name``; when a second consumer of this partition got ahead
        meanwhile, leaves out what it applied and goes on from its watermark, which only
        moves up."""
        while True:
            try:
                return self.apply(name, topic, partition, ops, requests, now_ms)
            except WatermarkMovedError:
                applied[name] = self.applied_offset(name, topic, partition)
                ops = plan_ops(requests, specs, applied).get(name, [])

    def _validate(self, topic: str, partition: int, requests: Sequence[OffsetRequest]) -> None:
        """Checks every request against the catalog, the first bad one raised with its place."""
        named = {c for _, r in requests if (c := collection_of(r)) is not None}
        collections = {name: self.catalog.spec(name) for name in named}
        for offset, request in requests:
            try:
                validate_request(request, collections)
            except CollectionManagerError as exc:
                exc.with_context(topic=topic, partition=partition, offset=offset)
                raise

    def settle_cut(
        self,
        collection: str,
        read_all_since_ms: int,
        delivery_ms: int,
        durability: Durability | None = None,
    ) -> SettleResult:
        """Settles a bucketed collection's cut (``storage/cut.py``); what it did."""
        spec = self.catalog.spec(collection)
        return settle(self._client, spec, read_all_since_ms, delivery_ms, durability)

    def take_refused(self, collection: str) -> dict[str, str]:
        """The refused appends not dead-lettered yet: ``topic:partition:offset`` -> why."""
        raw = self._client.hgetall(CollectionKeys(collection).refused)
        return {as_text(field): as_text(why) for field, why in raw.items()}

    def forget_refused(self, collection: str, fields: Sequence[str]) -> None:
        """Drops refusals whose dead letters were handled."""
        if fields:
            self._client.hdel(CollectionKeys(collection).refused, *fields)
