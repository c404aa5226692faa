"""The reader of storage collections: snapshots, stepped reads, cuts, the change log,
sizes, TTLs, counters.

Reads never write, and every one answers from Redis alone; the reader asks the catalog
(``catalog.py``) for specs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

import redis

from collection_manager.core.cut import Cut
from collection_manager.core.filters import Filter, validate
from collection_manager.core.specs import CollectionSpec
from collection_manager.core.stepped_read import Change
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.client import as_text
from collection_manager.storage.cut import read_cut
from collection_manager.storage.keys import (
    CollectionKeys,
)
from collection_manager.storage.library import READ, call
from collection_manager.storage.log_clock import newest_of_logs, redis_now_ms
from collection_manager.storage.ops import double_positions, query_json
from collection_manager.storage.planning import filter_query
from collection_manager.storage.read_results import CutChanges, LogEntry, Snapshot, buckets_to_read
from collection_manager.storage.rows import Row, decode_counted, decode_row, encode_row
from collection_manager.storage.step_reads import one_part, read_part, readable_time, visible_time


class StoreReader:
    """Reads the collections of one Redis.

    Args:
        client: a Redis client; responses must not be decoded (rows are compared as bytes).
        catalog: the specs it reads by (default: its own of ``client``).
    """

    def __init__(self, client: redis.Redis, catalog: Catalog | None = None) -> None:
        self._client = client
        self.catalog = Catalog(client) if catalog is None else catalog

    def spec(self, collection: str) -> CollectionSpec:
        """The definition of ``collection`` (``Catalog.spec``)."""
        return self.catalog.spec(collection)

    def snapshot(self, collection: str, where: Filter | None = None) -> Snapshot:
        """The rows (optionally those matching ``where``) at the latest readable time.

        Raises:
            UnknownCollectionError: when there is no such collection.
            FilterError: when ``where`` does not fit the collection's columns.
        """
        keys = CollectionKeys(collection)
        spec = self.spec(collection)
        if spec.buckets > 1 and spec.bucket is None:
            return self._read_buckets(spec, where)
        index_keys: list[str] | None = None
        residual = None
        if where is None:
            with self._client.pipeline(transaction=True) as pipe:
                pipe.get(keys.time)
                pipe.hgetall(keys.contents)
                pipe.exists(keys.pending)
                as_of, contents, pending = pipe.execute()
            if not pending:
                rows = decode_counted(list(contents), contents.values())
                return Snapshot(rows, int(as_of or 0))
            # A delete is in progress: cm_read leaves out the rows it will retract.
        else:
            validate(where, spec)
            index_keys, residual = filter_query(where, spec)
        reply = call(
            self._client,
            READ,
            [keys.contents, keys.time, keys.pending],
            [keys.index_prefix, query_json(index_keys, residual)],
            read_only=True,
        )
        rows = decode_counted(reply[1::2], reply[2::2])
        return Snapshot(rows, int(reply[0]))

    def stepped_snapshot(
        self, collection: str, where: Filter | None = None, limit: int | None = None
    ) -> Snapshot:
        """``snapshot`` in bounded calls: none looks at more than about ``STEP_ROWS`` rows,
        however large the collection (docs/concepts/reads.md, "Reads in bounded steps"). With
        ``limit``, at most that many rows (the first the scan finds), and it stops there.

        Raises:
            UnknownCollectionError: when there is no such collection.
            FilterError: when ``where`` does not fit the collection's columns.
            SteppedReadError: when no consistent read could be made (see ``read_part``).
        """
        spec = self.spec(collection)
        if spec.buckets > 1 and spec.bucket is None:
            return self._read_buckets(spec, where, limit)
        part = one_part(spec, where)
        as_of = visible_time(self._client, collection)
        rows, _ = read_part(self._client, spec, part, as_of, limit)
        return Snapshot(rows, as_of)

    def cut(self, collection: str, readable: bool = False) -> Cut:
        """The consistent cut of a bucketed collection's buckets now (``core/cut.py``); with
        ``readable``, of the times whose changes the logs hold whole (``tail_buckets``').

        Raises:
            CutError: when none could be read (see ``storage/cut.read_cut``).
        """
        return read_cut(self._client, self.spec(collection), readable)

    def read_buckets(
        self, collection: str, where: Filter | None = None, limit: int | None = None
    ) -> Snapshot:
        """A bucketed collection's rows at one consistent cut, in bounded steps per bucket;
        only the buckets ``where`` pins are read (an unbucketed collection: one read)."""
        return self._read_buckets(self.spec(collection), where, limit)

    def _read_buckets(
        self, spec: CollectionSpec, where: Filter | None, limit: int | None = None
    ) -> Snapshot:
        one_part(spec, where)  # checks the filter against the columns first
        cut = read_cut(self._client, spec)
        rows: dict[Row, int] = {}
        for bucket in buckets_to_read(spec, where):
            left = None if limit is None else limit - len(rows)
            if left == 0:
                break
            unit = spec.unit(bucket)
            found, _ = read_part(self._client, unit, one_part(unit, where), cut.times[bucket], left)
            rows.update(found)  # a row lies in one bucket only
        return Snapshot(rows, cut.total, cut)

    def tail_buckets(
        self, collection: str, since: Cut | None = None, limit: int | None = None
    ) -> CutChanges:
        """A bucketed collection's changes after ``since`` (default: its start) up to its
        consistent cut now; with ``limit``, the buckets are read in order until that many
        changes are found, and the cut returned is where each bucket's reading stopped, so
        the next call goes on from it without a gap or a change twice.
        """
        spec = self.spec(collection)
        # Readable times: a delete still in progress writes its changes with its last step.
        cut = read_cut(self._client, spec, readable=True)
        start = since.times if since is not None else (0,) * spec.buckets
        reached = list(cut.times)
        changes: list[tuple[int, Change[Row]]] = []
        for bucket in range(spec.buckets):
            if limit is not None and len(changes) >= limit:
                reached[bucket] = start[bucket]
                continue
            log = ChangeLog(self._client, spec.unit(bucket).name)
            for change in log.changes(start[bucket], cut.times[bucket]):
                if limit is not None and len(changes) >= limit and change.time > reached[bucket]:
                    break
                changes.append((bucket, change))
                reached[bucket] = change.time
            else:
                reached[bucket] = cut.times[bucket]
        return CutChanges(changes, Cut(tuple(reached)))

    def tail(self, collection: str, since: int = 0, limit: int | None = None) -> list[LogEntry]:
        """Changes at times ``>= since`` still in the log, oldest first.

        Only readable times: a delete in progress writes its changes at a time that becomes
        readable when its last step is done. Read in bounded pages (``ChangeLog.since``).
        """
        self.spec(collection)
        readable = readable_time(self._client, collection)
        return ChangeLog(self._client, collection).since(since, readable, limit)

    def newest(self, collection: str, count: int) -> tuple[list[LogEntry], int]:
        """The newest ``count`` changes still in the log, oldest first, and the latest
        readable time they go up to (read backwards in bounded steps: ``ChangeLog.newest``)."""
        self.spec(collection)
        readable = readable_time(self._client, collection)
        return ChangeLog(self._client, collection).newest(readable, count), readable

    def newest_buckets(self, collection: str, count: int) -> CutChanges:
        """A bucketed collection's newest ``count`` changes in all, up to its readable cut
        now (newest by the clocks the logs record: ``log_clock.newest_of_logs``), each
        bucket's oldest first, and that cut (``tail_buckets``'s ``since`` goes on from it).
        Each bucket's log is read backwards for at most ``count`` changes."""
        spec = self.spec(collection)
        cut = read_cut(self._client, spec, readable=True)
        logs = [
            ChangeLog(self._client, spec.unit(bucket).name).newest_clocked(through, count)
            for bucket, through in enumerate(cut.times)
        ]
        return CutChanges(newest_of_logs(logs, count), cut)

    def since_clock(self, collection: str, within_ms: int) -> int | Cut:
        """Where the changes applied in the last ``within_ms`` (by Redis's clock) begin, as
        ``tail`` and ``tail_buckets`` take it: the first such time (the latest readable time
        + 1 when there is none); of a bucketed collection, the cut just before each bucket's
        first such time. A few bounded calls per log (``ChangeLog.first_time_since``)."""
        spec = self.spec(collection)
        since_ms = redis_now_ms(self._client) - within_ms
        if spec.buckets > 1 and spec.bucket is None:
            cut = read_cut(self._client, spec, readable=True)
            logs = [ChangeLog(self._client, unit.name) for unit in spec.units()]
            return Cut(
                tuple(
                    log.first_time_since(since_ms, through) - 1
                    for log, through in zip(logs, cut.times, strict=True)
                )
            )
        readable = readable_time(self._client, collection)
        return ChangeLog(self._client, collection).first_time_since(since_ms, readable)

    def size(self, collection: str) -> tuple[int, int]:
        """``(distinct rows, latest readable time)`` of ``collection``, read atomically.

        While a delete runs in steps, the rows it has not reached yet are still counted. A
        bucketed collection's are its buckets' sums, each bucket read on its own.
        """
        rows = as_of = 0
        for unit in self._unit_names(collection):
            keys = CollectionKeys(unit)
            with self._client.pipeline(transaction=True) as pipe:
                pipe.hlen(keys.contents)
                pipe.get(keys.time)
                unit_rows, unit_time = pipe.execute()
            rows, as_of = rows + int(unit_rows), as_of + int(unit_time or 0)
        return rows, as_of

    def _unit_names(self, collection: str) -> list[str]:
        """The storage units of ``collection`` (itself, or its buckets; a unit's: itself)."""
        spec = self.spec(collection)
        return [spec.name] if spec.bucket is not None else [u.name for u in spec.units()]

    def expiries(self, collection: str, rows: Sequence[Row] | None = None) -> dict[Row, int]:
        """When each row with a TTL expires (ms): of ``rows``, or of every row."""
        spec = self.spec(collection)
        key = CollectionKeys(collection).expiries
        if rows is None:
            entries = cast(
                list[tuple[bytes, float]], self._client.zrange(key, 0, -1, withscores=True)
            )
            return {decode_row(row): int(at) for row, at in entries}
        if not rows:
            return {}
        doubles = double_positions(spec)
        scores = self._client.zmscore(key, [encode_row(row, doubles) for row in rows])
        return {row: int(at) for row, at in zip(rows, scores, strict=True) if at is not None}

    def ttl_summary(self, collection: str) -> tuple[int, int | None]:
        """``(rows with a TTL, when the next of them expires)`` of ``collection``."""
        key = CollectionKeys(collection).expiries
        with self._client.pipeline(transaction=True) as pipe:
            pipe.zcard(key)
            pipe.zrange(key, 0, 0, withscores=True)
            count, first = pipe.execute()
        return int(count), (int(first[0][1]) if first else None)

    def fences(self, collection: str) -> dict[str, int]:
        """Replica id -> highest dead epoch, as recorded by deletes with a fence."""
        raw = self._client.hgetall(CollectionKeys(collection).fences)
        return {as_text(k): int(v) for k, v in raw.items()}

    def stats(self, collection: str) -> dict[str, int]:
        """Counters of everything applied to ``collection`` so far."""
        raw = self._client.hgetall(CollectionKeys(collection).stats)
        return {as_text(k): int(v) for k, v in raw.items()}

    def scheduled(self, collection: str) -> int:
        """How many future retractions the schedule holds."""
        return int(self._client.zcard(CollectionKeys(collection).schedule))
