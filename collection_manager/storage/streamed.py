"""A collection's rows at one time, streamed a step at a time (``core/streamed_read.py``):
what ``serve`` answers as NDJSON and Arrow, in memory bounded by a step, whatever the size
of the collection.

The time (or a bucketed collection's cut) is read first, so that an answer can say it
before its rows; each step is one bounded Redis call, made only when the one before was
taken. The rows handed on are recorded as 8-byte fingerprints in a temporary file, read
back once at the end when rows changed during the read (to hand each on once).
"""

from __future__ import annotations

import array
import dataclasses
import tempfile
from collections.abc import Iterable, Iterator, Set

import redis

from collection_manager.core.cut import Cut
from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.filters import Filter
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.streamed_read import stream_at
from collection_manager.storage.cut import read_cut
from collection_manager.storage.keys import CATALOG
from collection_manager.storage.lua_filter import to_lua
from collection_manager.storage.ops import query_json
from collection_manager.storage.reads import buckets_to_read
from collection_manager.storage.step_reads import (
    ReadPart,
    RedisStepReads,
    one_part,
    visible_time,
)

# Fingerprints read back per call at the end: 8 bytes each.
_READ_BACK = 1 << 16


def _fingerprint(row: Row) -> int:
    # repr tells apart what hash() of a tuple may not (-1 and -2, 1 and 1.0); str's hash
    # is a keyed 64-bit SipHash, the same for the process' life: a read's span.
    return hash(repr(row))


class SpilledEmitted:
    """The rows a streamed read handed on, as fingerprints in a temporary file: 8 bytes a
    row on disk, none in memory. A fingerprint shared by two rows (about 1 in 2^64 per
    pair) would keep a changed row from being handed on; the chance is negligible.
    """

    def __init__(self) -> None:
        self._file = tempfile.TemporaryFile(prefix="cm-rows-")  # noqa: SIM115 (closed in close)
        self.count = 0

    def add(self, rows: Iterable[Row]) -> None:
        prints = array.array("q", map(_fingerprint, rows))
        self._file.write(prints.tobytes())
        self.count += len(prints)

    def among(self, rows: Set[Row]) -> set[Row]:
        if not rows or not self.count:
            return set()
        wanted: dict[int, list[Row]] = {}
        for row in rows:
            wanted.setdefault(_fingerprint(row), []).append(row)
        found: set[Row] = set()
        self._file.flush()
        self._file.seek(0)
        while chunk := self._file.read(8 * _READ_BACK):
            prints = array.array("q")
            prints.frombytes(chunk)
            for hit in wanted.keys() & set(prints):
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
    emitted = SpilledEmitted()
    try:
        yield from stream_at(reads, as_of, reads.wait_readable, emitted, limit)
        if not client.hexists(CATALOG, spec.collection):
            raise UnknownCollectionError(
                f"collection {spec.collection!r} was dropped while it was read",
                collection=spec.collection,
            )
    finally:
        emitted.close()


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
