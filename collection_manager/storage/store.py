"""Storage collections in Redis: atomic, exactly-once apply (the reads are in reads.py)."""

from __future__ import annotations

import collections
import dataclasses
import json
import logging
import time
from collections.abc import Sequence
from typing import Any

import redis

from collection_manager.core.buckets import DEFAULT_BUCKET_COLUMN, split_unit
from collection_manager.core.errors import (
    CollectionManagerError,
    UnknownCollectionError,
)
from collection_manager.core.planning import MAX_GROUP_UPDATES
from collection_manager.core.requests import collection_of, unit_of, validate_request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import connected_client
from collection_manager.storage.cut import SettleResult, settle
from collection_manager.storage.drop import CollectionDrop
from collection_manager.storage.errors import STRADDLES, StorageError, WatermarkMovedError
from collection_manager.storage.keys import (
    CATALOG,
    CollectionKeys,
    watermark_field,
    watermark_topic,
)
from collection_manager.storage.layout import check_layout
from collection_manager.storage.library import (
    APPLY,
    CONTINUE,
    DUE,
    HORIZON,
    call,
    install,
)
from collection_manager.storage.ops import (
    AppendOp,
    DeleteOp,
    FunctionCall,
    Op,
    chunk_ops,
    function_call,
)
from collection_manager.storage.plan import OffsetRequest, plan_ops, split_refused
from collection_manager.storage.reads import LogEntry, Snapshot, StoreReads, as_text
from collection_manager.storage.replication import Durability

__all__ = ["LogEntry", "RedisStore", "Snapshot", "wall_clock_ms"]

logger = logging.getLogger(__name__)

# The first element of cm_apply's reply when it refused a chunk (see functions.lua).
REFUSED = "refused"
# The reply of a writing function that wrote nothing because a delete is in progress.
HELD = "held"
# cm_continue's first element: "done" when the delete in progress ended (or there was none).
DONE = "done"

# How many candidate rows a delete may look at in one function call; a larger delete is
# done in steps of this many (docs/concepts/deletes.md). bench/reader_latency.py, during a delete
# of 1M rows on 2 shared cores: a separate reader's p99 was 13 ms with steps of 100 (about
# 1.4 ms of Redis each), 76 ms with 200 and worse with 1,000; the delete took 22 s, 19 s.
DELETE_STEP_ROWS = 100


@dataclasses.dataclass(frozen=True)
class Refusal:
    """cm_apply wrote nothing: op ``index`` of the chunk would take ``row`` to ``value``."""

    index: int
    row: str
    value: int


def wall_clock_ms() -> int:
    """The consumer's clock: this machine's, in ms since the Unix epoch
    (docs/concepts/ttl-and-expiration.md)."""
    return time.time_ns() // 1_000_000


def _counters(reply: Sequence[Any]) -> dict[str, int]:
    """The counters of a function's reply: name, value, name, value, ..."""
    return {as_text(n): int(v) for n, v in zip(reply[::2], reply[1::2], strict=True)}


def _add(totals: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    return {name: totals.get(name, 0) + more.get(name, 0) for name in totals.keys() | more.keys()}


def _spec_of(name: str, raw: bytes | str) -> CollectionSpec:
    record = json.loads(raw)
    # A collection created before buckets has no "buckets": one, today's layout.
    buckets = record.get("buckets", 1)
    column = record.get("bucket_column", DEFAULT_BUCKET_COLUMN)
    indexed = tuple(record["indexed_columns"])
    return CollectionSpec(name, record["row_schema"], indexed, buckets, column)


def catalog_record(spec: CollectionSpec) -> str:
    """The catalog's JSON of a collection (``buckets`` only when it has several, so an
    unbucketed collection's record is byte for byte 0.1.0's)."""
    record: dict[str, Any] = {
        "row_schema": spec.row_schema,
        "indexed_columns": list(spec.indexed_columns),
    }
    if spec.buckets > 1:
        record.update(buckets=spec.buckets, bucket_column=spec.bucket_column)
    return json.dumps(record)


def _layout_call(spec: CollectionSpec) -> FunctionCall:
    return function_call([], spec)


class RedisStore(StoreReads):
    """Storage collections in one Redis (or one Redis Cluster slot per collection).

    Args:
        client: a Redis client; responses must not be decoded (rows are compared as bytes).
        log_max_length: approximate number of change-log entries kept per collection.
        chunk_updates: about how many updates one function call applies, so that no single
            call blocks Redis for long; chunks split between request groups, never inside
            one (a group holds at most ``MAX_GROUP_UPDATES``).
        delete_step_rows: how many candidate rows one call of a delete looks at; a delete
            with more is done in several calls, while readers see it whole.

    Raises:
        LayoutError: when Redis holds a store layout this version does not serve.
    """

    def __init__(
        self,
        client: redis.Redis,
        log_max_length: int = 1_000_000,
        chunk_updates: int = MAX_GROUP_UPDATES,
        delete_step_rows: int = DELETE_STEP_ROWS,
    ) -> None:
        self._client = client
        self._log_max_length = log_max_length
        self._chunk_updates = chunk_updates
        self._delete_step_rows = delete_step_rows
        check_layout(client)
        self._drop = CollectionDrop(client)
        self._specs: dict[str, CollectionSpec] = {}
        self._records: dict[str, bytes | str] = {}  # the catalog's record of each spec
        self._skipped: set[str] = set()  # catalog names outside the name rule, warned once

    @classmethod
    def connect(cls, url: str, load_functions: bool = False, **kwargs: Any) -> RedisStore:
        """Connects and pings, so that a wrong address fails here with a clear message.

        Args:
            url: the Redis (or any node of a Redis Cluster).
            load_functions: first load this version's store functions beside other
                versions' (``library.install``), as the processes that write collections
                do; readers never load them (docs/concepts/upgrades.md).
            kwargs: as for the constructor.
        """
        client = connected_client(url)
        if load_functions:
            install(client)
        return cls(client, **kwargs)

    # Catalog

    def create_collection(self, spec: CollectionSpec) -> None:
        """Registers a collection (replacing the definition of one with the same name).

        The name was checked against the name rule when ``spec`` was made (``core/names.py``).
        """
        self._drop.finish(spec.name)  # a drop of that name that stopped half way: end it
        self._client.hset(CATALOG, spec.name, catalog_record(spec))
        self._specs[spec.name] = spec

    def spec(self, collection: str) -> CollectionSpec:
        """The definition of ``collection``, or of one bucket's storage unit (``c#b``).

        Raises:
            UnknownCollectionError: when no such collection was created.
            InvalidNameError: for a name created before the name rule (``core/names.py``).
            SchemaError: for a bucket the collection does not have.
        """
        name, bucket = split_unit(collection)
        if bucket is not None:
            if collection not in self._specs:
                self._specs[collection] = self.spec(name).unit(bucket)
            return self._specs[collection]
        if collection not in self._specs:
            raw = self._client.hget(CATALOG, collection)
            if raw is None:
                known = ", ".join(self.collections()) or "none"
                raise UnknownCollectionError(
                    f"unknown collection {collection!r}; known: {known}", collection=collection
                )
            self._specs[collection] = _spec_of(collection, raw)
        return self._specs[collection]

    def specs(self) -> dict[str, CollectionSpec]:
        """Every collection's definition, by name, from one read of the catalog.

        One read, so a collection dropped meanwhile cannot fail the call (the consumer
        calls it every micro-batch). An entry that is no valid definition (a name from
        before the name rule, ``core/names.py``) is left out with a warning: requests
        naming it are refused, the consumer keeps running, and it can still be dropped.
        """
        specs = {}
        for key, raw in sorted(self._client.hgetall(CATALOG).items()):
            name = as_text(key)
            if name in self._specs and self._records.get(name) != raw:
                self._forget(name)  # dropped and created again since, maybe with other buckets
            self._records[name] = raw
            if name not in self._specs:
                try:
                    self._specs[name] = _spec_of(name, raw)
                except CollectionManagerError as exc:
                    if name not in self._skipped:
                        self._skipped.add(name)
                        logger.warning("ignoring collection %r: %s; drop it", name, exc)
                    continue
            specs[name] = self._specs[name]
        return specs

    def unit_specs(self) -> list[CollectionSpec]:
        """The spec of every storage unit: each collection, or each bucket of a bucketed one."""
        return [unit for spec in self.specs().values() for unit in spec.units()]

    def collections(self) -> list[str]:
        """Names of all collections, sorted."""
        return sorted(as_text(name) for name in self._client.hkeys(CATALOG))

    def drop_collection(self, collection: str) -> None:
        """Deletes a collection: its definition at once, then exactly its keys (never keys
        matched by a pattern) in bounded steps (``storage/drop.py``)."""
        self._forget(collection)
        self._drop.drop(collection)

    def _forget(self, collection: str) -> None:
        """Forgets the cached specs of ``collection`` and of its buckets (``c#b``)."""
        for name in [n for n in self._specs if split_unit(n)[0] == collection]:
            del self._specs[name]

    # Writes

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
        spec = self.spec(collection)
        totals: dict[str, int] = {}
        chunks = collections.deque(chunk_ops(ops, self._chunk_updates))
        while chunks:
            chunk = chunks.popleft()
            arguments = function_call(chunk, spec, self._delete_step_rows, now_ms)
            reply = self._run(APPLY, spec, arguments, watermark_field(topic, partition))
            if isinstance(reply, Refusal):
                # Nothing of the chunk was written: replace the op at fault and run it again.
                op = chunk[reply.index]
                assert isinstance(op, AppendOp)
                chunk[reply.index : reply.index + 1] = split_refused(
                    op, requests, spec, reply.row, reply.value
                )
                chunks.appendleft(chunk)
                continue
            if isinstance(chunk[-1], DeleteOp):  # it may have left a delete in progress
                reply = _add(reply, self._finish_delete(spec))
            totals = _add(totals, reply)
        return totals

    def finish_deletes(self) -> None:
        """Finishes every collection's delete in progress (one a stopped consumer left).

        Writes finish one before they write; this makes the delete's time readable without
        waiting for the collection's next write.
        """
        for spec in self.unit_specs():
            self._finish_delete(spec)

    def _finish_delete(self, spec: CollectionSpec) -> dict[str, int]:
        """Runs ``cm_continue`` until the collection has no delete in progress; its counters."""
        totals: dict[str, int] = {}
        while True:
            state, *counters = self._call(
                CONTINUE, spec, _layout_call(spec), self._delete_step_rows
            )
            totals = _add(totals, _counters(counters))
            if as_text(state) == DONE:
                return totals

    def _held_off(
        self, function: str, spec: CollectionSpec, given: FunctionCall, own: object
    ) -> Any:
        """Calls a writing function; while a delete is in progress, finishes it first."""
        reply = self._call(function, spec, given, own)
        while isinstance(reply, list) and reply and as_text(reply[0]) == HELD:
            self._finish_delete(spec)
            reply = self._call(function, spec, given, own)
        return reply

    def _run(self, function: str, spec: CollectionSpec, given: FunctionCall, own: object) -> Any:
        """Calls a writing function (``_held_off``); its refusal or its counters."""
        reply = self._held_off(function, spec, given, own)
        if isinstance(reply, list) and reply and as_text(reply[0]) == REFUSED:
            return Refusal(int(reply[1]) - 1, as_text(reply[2]), int(reply[3]))
        if isinstance(reply, list):
            return _counters(reply)
        return reply

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
        spec = self.spec(collection)
        ttl_clock = now_ms if ttl_clock_ms is None else ttl_clock_ms
        given = function_call([], spec, now_ms=ttl_clock)
        totals: dict[str, int] = {}
        while True:  # in calls of at most DUE_STEP_ROWS rows, each at its own time
            state, *counters = self._held_off(DUE, spec, given, now_ms)
            totals = _add(totals, _counters(counters))
            if as_text(state) == DONE:
                return totals

    def set_expiration(self, collection: str, expiration_ms: int | None) -> int:
        """Sets the expiration and rebuilds the schedule for it; returns the schedule's size.

        Retractions at or after the expiration are kept in the ledger, not the schedule;
        call this again (with a later expiration) before the clock reaches it.
        """
        spec = self.spec(collection)
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
        named = {c for _, r in requests if (c := collection_of(r)) is not None}
        if not validated:
            collections = {name: self.spec(name) for name in named}
            for offset, request in requests:
                try:
                    validate_request(request, collections)
                except CollectionManagerError as exc:
                    exc.with_context(topic=topic, partition=partition, offset=offset)
                    raise
        units = {u for _, r in requests if (u := unit_of(r)) is not None}
        specs = {unit: self.spec(unit) for unit in units}
        applied = {name: self.applied_offset(name, topic, partition) for name in specs}
        planned = plan_ops(requests, specs, applied)
        done: dict[str, dict[str, int]] = {}
        for name, ops in planned.items():
            while True:
                try:
                    done[name] = _add(
                        done.get(name, {}),
                        self.apply(name, topic, partition, ops, requests, now_ms),
                    )
                    break
                except WatermarkMovedError:
                    # A second consumer of this partition got ahead: leave out what it
                    # applied and go on from its watermark, which only moves up.
                    applied[name] = self.applied_offset(name, topic, partition)
                    ops = plan_ops(requests, specs, applied).get(name, [])
        return done

    def settle_cut(
        self,
        collection: str,
        read_all_since_ms: int,
        delivery_ms: int,
        durability: Durability | None = None,
    ) -> SettleResult:
        """Settles a bucketed collection's cut (``storage/cut.py``); what it did."""
        spec = self.spec(collection)
        return settle(self._client, spec, read_all_since_ms, delivery_ms, durability)

    def take_refused(self, collection: str) -> dict[str, str]:
        """The refused appends not dead-lettered yet: ``topic:partition:offset`` -> why."""
        raw = self._client.hgetall(CollectionKeys(collection).refused)
        return {as_text(field): as_text(why) for field, why in raw.items()}

    def forget_refused(self, collection: str, fields: Sequence[str]) -> None:
        """Drops refusals whose dead letters were handled."""
        if fields:
            self._client.hdel(CollectionKeys(collection).refused, *fields)
