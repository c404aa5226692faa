"""Reads at one time in bounded steps, on Redis (``core/stepped_read.py`` says how).

Each call does a bounded amount of work: a scan step looks at about ``STEP_ROWS`` candidate
rows (``cm_scan``), a second look asks for at most ``COUNTS_PER_CALL`` rows (``cm_counts``),
and the change log is read a bounded page a call (``change_log.ChangeLog``). So a read of
10^7 rows never holds Redis for longer than one step, and other clients are served in
between.

A read may be split: by index set (one part per set of a pushed-down ``IN``) or, for a
scan, in ``parts`` parts by a hash of the row, each a separate read that Spark runs in
parallel. Every part reads at the same time ``as_of``, so together they are one snapshot.
"""

from __future__ import annotations

import dataclasses
import hashlib
import time
from collections.abc import Iterator, Sequence
from typing import cast

import redis

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.filters import Filter, compile_filter, validate
from collection_manager.core.scan_order import position, revisit_start
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import (
    Change,
    ScanStep,
    ServerChanged,
    Span,
    SteppedReadError,
    read_at,
)
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.client import as_text
from collection_manager.storage.keys import CATALOG, CollectionKeys
from collection_manager.storage.library import COUNTS, SCAN, call
from collection_manager.storage.ops import double_positions, query_json
from collection_manager.storage.planning import filter_query
from collection_manager.storage.rows import (
    cycle_collection_paused,
    decode_rows,
    encode_row,
    index_value,
)

# Candidate rows one scan step looks at (about: a step ends with the scan call that passes it).
STEP_ROWS = 2_000
# How long a read waits for a delete in progress to become readable, and how often a read
# that met another server (a restart, a failover) starts again before it gives up.
PENDING_WAIT_S = 60.0
ATTEMPTS = 3


@dataclasses.dataclass(frozen=True)
class ReadPart:
    """What one part of a read asks for: a filter (None: every row), and its share.

    ``index_keys`` restricts the scan to those index sets (from the filter's index lookup);
    ``parts``/``slot`` split a scan by a hash of the row. Picklable, for Spark's executors.
    """

    where: Filter | None = None
    index_keys: tuple[str, ...] | None = None
    parts: int = 1
    slot: int = 0


def one_part(spec: CollectionSpec, where: Filter | None) -> ReadPart:
    """The whole of a read of ``spec`` matching ``where``: the index sets that answer it,
    or a scan.

    Raises:
        FilterError: when ``where`` does not fit the collection's columns.
    """
    if where is None:
        return ReadPart()
    validate(where, spec)
    index_keys, _ = filter_query(where, spec)
    return ReadPart(where, None if index_keys is None else tuple(index_keys))


def split(spec: CollectionSpec, where: Filter | None, parts: int) -> list[ReadPart]:
    """The parts of a read of ``spec`` matching ``where``: one per index set when the index
    answers it with the sets of one column (disjoint: a row holds one value there), else
    ``parts`` shares of a scan (or of the sets of several columns, which may overlap)."""
    whole = one_part(spec, where)
    if whole.index_keys is not None:
        columns = {key.split(":", 1)[0] for key in whole.index_keys}
        if len(columns) == 1 and len(whole.index_keys) > 1:
            return [ReadPart(where, (key,)) for key in whole.index_keys]
        return [whole]
    return [ReadPart(where, None, parts, slot) for slot in range(parts)]


# The place of a scan that is done: after every key's.
_DONE = (1 << 31, 0)


def scan_spans(
    started: tuple[int, int], following: tuple[int, int], probe: int
) -> tuple[Span, Span | None]:
    """The stretch of the scan's order a ``cm_scan`` step covered, and the part of it it may
    have scanned before (``core/scan_order.py``).

    Args:
        started: the (key position, cursor) the step was given.
        following: the (key position, cursor) it answered; position 0 once done.
        probe: the cursor of the step's scan of one element from 0 of its first key.
    """
    key, cursor = started
    again_from = revisit_start(cursor, probe)
    start = (key, position(cursor) if again_from is None else again_from)
    end = _DONE if following[0] == 0 else (following[0], position(following[1]))
    again = None if again_from is None else Span(start, (key, position(cursor)))
    return Span(start, end), again


class RedisStepReads:
    """``StepReads`` of one part of a read of one collection, on one Redis."""

    def __init__(self, client: redis.Redis, spec: CollectionSpec, part: ReadPart) -> None:
        self._client = client
        self._spec = spec
        self._part = part
        self._keys = CollectionKeys(spec.name)
        self._log = ChangeLog(client, spec.name)
        self._doubles = double_positions(spec)
        residual = None
        if part.where is not None:
            _, residual = filter_query(part.where, spec)
        self._query = query_json(part.index_keys, residual)
        self._own_keys = None if part.index_keys is None else set(part.index_keys)
        self._matches = (
            None if part.where is None else compile_filter(part.where, spec.column_names)
        )
        self.rows_read = 0  # rows the scan steps and second looks returned
        self._encodings: dict[Row, bytes] | None = None

    def keep_encodings(self) -> dict[Row, bytes]:
        """From now on, the last scan step's rows with their encodings as Redis sent them
        (the dict returned, refilled by each step; one step's rows in memory)."""
        if self._encodings is None:
            self._encodings = {}
        return self._encodings

    def _read_keys(self) -> list[str]:
        return [self._keys.contents, self._keys.time, self._keys.pending]

    def scan(self, cursor: object | None) -> ScanStep[Row]:
        position, at = cast(tuple[int, str], cursor or (1, "0"))
        part = self._part
        reply = call(
            self._client,
            SCAN,
            self._read_keys(),
            [self._keys.index_prefix, self._query, position, at, STEP_ROWS, part.parts, part.slot],
            read_only=True,
        )
        encoded = reply[5::2]
        rows = decode_rows(encoded)
        self.rows_read += len(rows)
        if self._encodings is not None:
            self._encodings.clear()
            self._encodings.update(zip(rows, encoded, strict=True))
        following, next_cursor = int(reply[2]), as_text(reply[3])
        covers, again = scan_spans(
            (position, int(at)), (following, int(next_cursor)), int(reply[4])
        )
        return ScanStep(
            time=int(reply[0]),
            server=as_text(reply[1]),
            cursor=None if following == 0 else (following, next_cursor),
            rows=dict(zip(rows, map(int, reply[6::2]), strict=True)),
            covers=covers,
            again=again,
        )

    def counts(self, rows: Sequence[Row]) -> tuple[int, list[int]]:
        encoded = [encode_row(row, self._doubles) for row in rows]
        reply = call(
            self._client, COUNTS, self._read_keys(), [self._keys.index_prefix, *encoded], True
        )
        self.rows_read += len(rows)
        return int(reply[0]), [int(count) for count in reply[1:]]

    def readable(self) -> int:
        return readable_time(self._client, self._spec.name)

    def changes(self, after: int, through: int) -> Iterator[Change[Row]]:
        return self._log.changes(after, through)

    def trimmed_through(self) -> int:
        return self._log.trimmed_through()

    def wanted(self, row: Row) -> bool:
        part = self._part
        if self._matches is not None and not self._matches(row):
            return False
        if self._own_keys is not None and not self._in_own_sets(row):
            return False
        if part.parts > 1:
            digest = hashlib.sha1(encode_row(row, self._doubles).encode()).hexdigest()
            return int(digest[:8], 16) % part.parts == part.slot
        return True

    def _in_own_sets(self, row: Row) -> bool:
        # A row is in the index set of each indexed column's value (rows.index_value).
        assert self._own_keys is not None
        for column, value in zip(self._spec.column_names, row, strict=True):
            indexed = column in self._spec.indexed_columns and value is not None
            if indexed and f"{column}:{index_value(value)}" in self._own_keys:
                return True
        return False

    def wait_readable(self, at: int) -> None:
        deadline = time.monotonic() + PENDING_WAIT_S
        pause = 0.01
        while self.readable() < at:
            if time.monotonic() > deadline:
                raise SteppedReadError(
                    f"a delete in progress in {self._spec.name} at time {at} did not finish "
                    f"within {PENDING_WAIT_S:.0f} s (the consumer applies it step by step); "
                    "read again once it has",
                    collection=self._spec.name,
                )
            time.sleep(pause)
            pause = min(2 * pause, 0.5)


def readable_time(client: redis.Redis, collection: str) -> int:
    """The latest readable time: the change log is whole up to it."""
    return int(client.get(CollectionKeys(collection).time) or 0)


def visible_time(client: redis.Redis, collection: str) -> int:
    """The time readers see now: the latest readable one, or while a delete is in progress,
    its time (it is whole to readers). ``cm_counts`` of no rows answers just that."""
    keys = CollectionKeys(collection)
    reply = call(
        client, COUNTS, [keys.contents, keys.time, keys.pending], [keys.index_prefix], True
    )
    return int(reply[0])


def read_part(
    client: redis.Redis,
    spec: CollectionSpec,
    part: ReadPart,
    as_of: int,
    limit: int | None = None,
) -> tuple[dict[Row, int], int]:
    """One part's rows at ``as_of`` (at most ``limit`` of them) and how many rows Redis
    returned to get them. ``as_of`` is best a ``visible_time``: an older time needs the
    changes since, and a later one is not there yet.

    Raises:
        SteppedReadError: when no consistent read could be made (see ``read_at``).
        UnknownCollectionError: when the collection was dropped while it was read.
    """
    for attempt in range(1, ATTEMPTS + 1):
        reads = RedisStepReads(client, spec, part)
        try:
            # A read builds a tuple per row: the cyclic collector would walk them all again
            # and again as they pile up (none can be in a cycle).
            with cycle_collection_paused():
                rows = read_at(reads, as_of, reads.wait_readable, limit)
            if not client.hexists(CATALOG, spec.collection):  # a drop meanwhile: no snapshot
                raise UnknownCollectionError(
                    f"collection {spec.collection!r} was dropped while it was read",
                    collection=spec.collection,
                )
            return rows, reads.rows_read
        except ServerChanged as exc:
            if attempt == ATTEMPTS:
                raise SteppedReadError(
                    f"{exc} {ATTEMPTS} times while reading {spec.name}; read again",
                    collection=spec.name,
                ) from None
    raise AssertionError("unreachable")
