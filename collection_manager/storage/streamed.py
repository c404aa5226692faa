"""A collection's rows at one time, streamed a step at a time (``core/streamed_read.py``):
what ``serve`` answers as NDJSON and Arrow, in memory bounded by a step, whatever the size
of the collection.

The time (or a bucketed collection's cut) is read first, so that an answer can say it
before its rows; each step is one bounded Redis call, made only when the one before was
taken. The rows handed on are recorded as 16-byte fingerprints of their canonical
encodings (the bytes Redis holds) in a temporary file, read back when rows changed during
the read, and by a step that may have scanned a stretch again (a table that shrank under
the read), so that each row goes once.
"""

from __future__ import annotations

import dataclasses
import hashlib
import tempfile
from collections.abc import Callable, Iterable, Iterator, Set

import redis

from collection_manager.core.cut import Cut
from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.filters import Filter
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import Span
from collection_manager.core.streamed_read import stream_at
from collection_manager.storage.cut import read_cut
from collection_manager.storage.keys import CATALOG
from collection_manager.storage.lua_filter import to_lua
from collection_manager.storage.ops import double_positions, query_json
from collection_manager.storage.reads import buckets_to_read
from collection_manager.storage.rows import encode_row
from collection_manager.storage.step_reads import (
    ReadPart,
    RedisStepReads,
    one_part,
    visible_time,
)

# Fingerprints read back per call: 16 bytes each.
_READ_BACK = 1 << 16
_PRINT = 16


def _fingerprint(encoding: bytes) -> bytes:
    # Of the canonical encoding: one row has one (hash() of a tuple confuses -1 and -2), and
    # a scanned row's is the field Redis sent, so none is made again (a third of the cost
    # of repr). 128 bits: two rows of a read of 10^9 share one with a chance under 10^-20.
    return hashlib.blake2b(encoding, digest_size=_PRINT).digest()


@dataclasses.dataclass(frozen=True)
class _Step:
    """Where one step's fingerprints are in the file, and the stretch it covered."""

    covers: Span | None
    offset: int
    count: int


class SpilledEmitted:
    """The rows a streamed read handed on: the last step's rows in memory (a later step
    checks those against them, exactly, in the common case), every step's as 16-byte
    fingerprints in a temporary file, and a few numbers per step (where in the file, the
    stretch of the scan it covered). Memory holds one step, whatever the read's size.

    ``encoding`` gives a row's canonical encoding: the scan's bytes for the rows of its
    last step, ``encode_row`` for the others.
    """

    def __init__(self, encoding: Callable[[Row], bytes]) -> None:
        self._encoding = encoding
        self._file = tempfile.TemporaryFile(prefix="cm-rows-")  # noqa: SIM115 (closed in close)
        self._steps: list[_Step] = []
        self._last: set[Row] = set()
        self.count = 0

    def add(self, rows: Iterable[Row], covers: Span | None) -> None:
        self._last = set(rows)
        prints = b"".join(_fingerprint(self._encoding(row)) for row in self._last)
        self._steps.append(_Step(covers, self.count, len(self._last)))
        self._file.write(prints)
        self.count += len(self._last)

    def among(self, rows: Set[Row], within: Span | None = None) -> set[Row]:
        if not rows or not self.count:
            return set()
        steps = [
            step
            for step in self._steps
            if within is None or (step.covers is not None and step.covers.overlaps(within))
        ]
        found: set[Row] = set()
        if steps and steps[-1] is self._steps[-1]:  # the last step: its rows are at hand
            found |= self._last & rows
            steps.pop()
        if steps:
            found |= self._among_spilled(rows, steps)
        return found

    def _among_spilled(self, rows: Set[Row], steps: list[_Step]) -> set[Row]:
        wanted: dict[bytes, list[Row]] = {}
        for row in rows:
            wanted.setdefault(_fingerprint(self._encoding(row)), []).append(row)
        found: set[Row] = set()
        self._file.flush()
        for step in steps:
            self._file.seek(step.offset * _PRINT)
            left = step.count
            while left:
                chunk = self._file.read(_PRINT * min(left, _READ_BACK))
                left -= len(chunk) // _PRINT
                prints = {chunk[i : i + _PRINT] for i in range(0, len(chunk), _PRINT)}
                for hit in wanted.keys() & prints:
                    found.update(wanted[hit])
        self._file.seek(0, 2)
        return found

    def close(self) -> None:
        self._file.close()


class _ContentsScan(RedisStepReads):
    """A scan of the contents that keeps the rows matching the whole of ``where``."""

    def __init__(self, client: redis.Redis, spec: CollectionSpec, where: Filter) -> None:
        super().__init__(client, spec, ReadPart(where))
        self._query = query_json(None, to_lua(where, spec.column_names))


@dataclasses.dataclass
class RowStream:
    """The rows of one read, at ``as_of`` (a bucketed collection's: at ``cut``, whose
    total ``as_of`` is): ``steps`` hands them on, a step's at a time, each row once.
    Closing it (or ``steps``) ends the read."""

    as_of: int
    cut: Cut | None
    steps: Iterator[dict[Row, int]]

    @property
    def as_of_text(self) -> str:
        return str(self.as_of) if self.cut is None else self.cut.text()

    def close(self) -> None:
        close = getattr(self.steps, "close", None)
        if close is not None:
            close()


def stream_unit(
    client: redis.Redis, spec: CollectionSpec, part: ReadPart, as_of: int, limit: int | None
) -> Iterator[dict[Row, int]]:
    """One storage unit's rows at ``as_of``, a step at a time.

    Raises:
        SteppedReadError: when no consistent read could be made; the steps handed on
            stand, so the read cannot start again (``read_part`` can).
        UnknownCollectionError: when the collection was dropped while it was read.
    """
    reads = RedisStepReads(client, spec, part)
    columns = {key.split(":", 1)[0] for key in part.index_keys or ()}
    if part.where is not None and len(columns) > 1:
        # The sets of several columns overlap, and a row in two would come twice: one scan
        # of the contents with the whole filter finds each row once.
        reads = _ContentsScan(client, spec, part.where)
    emitted = SpilledEmitted(_encodings(reads, spec))
    try:
        yield from stream_at(reads, as_of, reads.wait_readable, emitted, limit)
        if not client.hexists(CATALOG, spec.collection):
            raise UnknownCollectionError(
                f"collection {spec.collection!r} was dropped while it was read",
                collection=spec.collection,
            )
    finally:
        emitted.close()


def _encodings(reads: RedisStepReads, spec: CollectionSpec) -> Callable[[Row], bytes]:
    """Rows' canonical encodings: the last scan step's as Redis sent them, others made."""
    doubles = double_positions(spec)
    scanned = reads.keep_encodings()

    def encoding(row: Row) -> bytes:
        found = scanned.get(row)
        return found if found is not None else encode_row(row, doubles).encode()

    return encoding


def buckets_steps(
    client: redis.Redis,
    spec: CollectionSpec,
    where: Filter | None,
    cut: Cut,
    buckets: list[int],
    limit: int | None,
) -> Iterator[dict[Row, int]]:
    """A bucketed collection's rows at ``cut``, bucket after bucket (a row lies in one)."""
    left = limit
    for bucket in buckets:
        unit = spec.unit(bucket)
        for step in stream_unit(client, unit, one_part(unit, where), cut.times[bucket], left):
            if left is not None:
                left -= len(step)
            yield step
        if left == 0:
            return


def stream_rows(
    client: redis.Redis, spec: CollectionSpec, where: Filter | None, limit: int | None
) -> RowStream:
    """``stepped_snapshot``'s rows of ``spec`` handed on a step at a time: the time (a
    bucketed collection's cut) is read now, each step only when the one before was taken,
    so memory holds one step however large the collection.

    Raises:
        FilterError: when ``where`` does not fit the collection's columns.
        CutError: when no cut could be read (a bucketed collection).
    """
    part = one_part(spec, where)  # checks the filter against the columns first
    if spec.buckets > 1 and spec.bucket is None:
        cut = read_cut(client, spec)
        steps = buckets_steps(client, spec, where, cut, buckets_to_read(spec, where), limit)
        return RowStream(cut.total, cut, steps)
    as_of = visible_time(client, spec.name)
    return RowStream(as_of, None, stream_unit(client, spec, part, as_of, limit))
