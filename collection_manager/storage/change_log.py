"""A storage unit's change log, and its one reader.

Each storage unit (a collection, or one bucket of a bucketed one) logs its changes in a
Redis stream (``CollectionKeys.log``): entries ``<time>-<seq>``, one per time or more for a
time of more than 512 changes (``collection.lua``), each holding JSON arrays of rows and of
diffs and the clock of the call that wrote it (``keys.LOG_*_FIELD``). ``XADD MAXLEN ~``
trims the oldest entries.

:class:`ChangeLog` alone reads it, for ``collections tail`` (``reads.StoreReader``), the
HTTP change feed (``http/changes.py``), the Spark change stream (``sql/changes.py``),
stepped reads (``step_reads.py``) and anything that follows a log from a position it
recorded. Every call it makes is bounded, never the whole log: at most
``LOG_ENTRIES_PER_CALL`` entries (a page a caller sizes: ``MAX_PAGE_ENTRIES``; a probe of
the clock search: one). It decodes entries to the core's :class:`Change`, and
:meth:`ChangeLog.check_held` is the one test of a log trimmed past a position
(:class:`LogTrimmedError`).

Positions in a log and the arithmetic of trimming are ``log_positions.py``'s.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterator
from typing import cast

import redis

from collection_manager.core.errors import LogTrimmedError
from collection_manager.core.specs import Row
from collection_manager.core.stepped_read import Change
from collection_manager.storage.client import as_text
from collection_manager.storage.keys import (
    LOG_CLOCK_FIELD,
    LOG_DIFFS_FIELD,
    LOG_ROWS_FIELD,
    CollectionKeys,
)
from collection_manager.storage.log_clock import first_recent_time
from collection_manager.storage.log_positions import (
    EntryId,
    LogPosition,
    entry_id,
    trim_front,
    trimmed_past,
    trimmed_through_time,
)

# Change-log entries one XRANGE reads (an entry holds up to 512 changes of one time).
LOG_ENTRIES_PER_CALL = 20
# The most entries a page of ChangeLog.after may ask for.
MAX_PAGE_ENTRIES = 1_000

# What XRANGE answers on a client that does not decode replies.
LogEntries = list[tuple[bytes, dict[bytes, bytes]]]

_ROWS, _DIFFS, _CLOCK = LOG_ROWS_FIELD.encode(), LOG_DIFFS_FIELD.encode(), LOG_CLOCK_FIELD.encode()


@dataclasses.dataclass(frozen=True)
class LogPage:
    """One page of a change log: its changes, oldest first; the position to read on from
    (``ChangeLog.after`` says which); whether it was full (entries may follow it)."""

    changes: list[Change[Row]]
    position: LogPosition
    full: bool


def log_changes(entries: LogEntries) -> Iterator[Change[Row]]:
    """The changes of change-log entries (each holds one time's rows and diffs, as JSON)."""
    for raw_id, fields in entries:
        at = int(raw_id.split(b"-")[0])
        rows, diffs = json.loads(fields[_ROWS]), json.loads(fields[_DIFFS])
        for row, diff in zip(rows, diffs, strict=True):
            yield Change(at, tuple(row), int(diff))


def entry_clock(fields: dict[bytes, bytes]) -> int | None:
    """The clock an entry records, None for one an older library wrote (without it)."""
    raw = fields.get(_CLOCK)
    return None if raw is None else int(raw)


class ChangeLog:
    """The change log of one storage unit, read in bounded calls.

    Args:
        client: a Redis client that does not decode replies.
        unit: the storage unit: a collection, or one bucket of it (``core/buckets.py``).
    """

    def __init__(self, client: redis.Redis, unit: str) -> None:
        self._client = client
        self.unit = unit
        self._key = CollectionKeys(unit).log

    def after(
        self,
        position: LogPosition | int,
        limit: int = LOG_ENTRIES_PER_CALL,
        through: int | None = None,
    ) -> LogPage:
        """The page of at most ``limit`` entries after ``position``: one call. Read up to
        the readable time as ``through`` to have whole times only (None: every entry there
        is, a time a delete in progress writes too). Checked for trimming after the read,
        so a page it returns holds every entry after ``position`` up to its end. A page
        that is not full read all there is through ``through``: its position is then that
        time (nothing of it is left to read), else after its last entry.

        Raises:
            LogTrimmedError: when the log was trimmed past ``position``.
            ValueError: when ``limit`` is not 1 to ``MAX_PAGE_ENTRIES``.
        """
        if not 1 <= limit <= MAX_PAGE_ENTRIES:
            raise ValueError(f"a page holds 1 to {MAX_PAGE_ENTRIES} entries, not {limit}")
        at = LogPosition.of(position)
        entries = self._range(at.start(), "+" if through is None else str(through), limit)
        self.check_held(at)
        full = len(entries) == limit
        if not full and through is not None and through >= at.time:
            reached = LogPosition(through)
        elif entries:
            reached = LogPosition(*entry_id(entries[-1][0]))
        else:
            reached = at
        return LogPage(list(log_changes(entries)), reached, full)

    def changes(self, after: int, through: int) -> Iterator[Change[Row]]:
        """The changes at times in ``(after, through]``, oldest first. Not checked for
        trimming: check with :meth:`check_held` after reading (a stepped read does)."""
        for entries in self._pages(f"{after + 1}-0", str(through)):
            yield from log_changes(entries)

    def times(self, after: int, through: int, most: int) -> tuple[list[Change[Row]], int]:
        """The changes of the times in ``(after, through]``, whole times only, until they
        hold ``most`` changes or ``through`` is reached; and the time they reach.

        ``through`` must be readable (its changes all in the log). After each read of the
        log its trimming is checked: nothing after ``after`` may have gone before it was read.

        Raises:
            LogTrimmedError: when the log was trimmed past ``after``.
        """
        whole: list[Change[Row]] = []  # changes of times known complete
        current: list[Change[Row]] = []  # of the latest time read, maybe not complete yet
        reached = after
        for entries in self._pages(f"{after + 1}-0", str(through)):
            self.check_held(after)
            for change in log_changes(entries):
                if current and change.time != current[0].time:
                    whole.extend(current)
                    reached, current = current[0].time, []
                current.append(change)
            if len(entries) < LOG_ENTRIES_PER_CALL:  # the end: every entry to `through` read
                return whole + current, through
            if len(whole) >= most:  # the latest time is read again by the next call
                return whole, reached
        raise AssertionError("unreachable: the pages end with a short one")

    def since(self, time: int, through: int, limit: int | None = None) -> list[Change[Row]]:
        """The changes at times in ``[time, through]`` still in the log, oldest first; with
        ``limit``, the first that many (read only until there are)."""
        if limit == 0:
            return []
        found: list[Change[Row]] = []
        for entries in self._pages(f"{time}-0", str(through)):
            found.extend(log_changes(entries))
            if limit is not None and len(found) >= limit:
                return found[:limit]
        return found

    def newest(self, through: int, count: int) -> list[Change[Row]]:
        """The newest ``count`` changes at times ``<= through``, oldest first: the log read
        backwards, ``LOG_ENTRIES_PER_CALL`` entries a call, until they hold that many."""
        return [change for _, change in self.newest_clocked(through, count)]

    def newest_clocked(self, through: int, count: int) -> list[tuple[int | None, Change[Row]]]:
        """``newest``, each change with the clock its entry records (``entry_clock``; None:
        written before the log recorded one)."""
        chunks: list[list[tuple[int | None, Change[Row]]]] = []  # newest entry first
        found, end = 0, str(through)
        while found < count:
            entries = self._range_back(end, LOG_ENTRIES_PER_CALL)
            for entry in entries:
                clock = entry_clock(entry[1])
                chunks.append([(clock, change) for change in log_changes([entry])])
                found += len(chunks[-1])
                if found >= count:
                    break
            if len(entries) < LOG_ENTRIES_PER_CALL:
                break
            end = "(" + as_text(entries[-1][0])
        changes = [change for chunk in reversed(chunks) for change in chunk]
        return changes[max(0, len(changes) - count) :]

    def first_time_since(self, since_ms: int, through: int) -> int:
        """The first time ``<= through`` whose changes were applied at ``since_ms`` or
        later by the clocks the log records; ``through + 1`` when there is none. A binary
        search of single-entry probes (``log_clock.first_recent_time``)."""
        return first_recent_time(self._first_at, since_ms, through)

    def trimmed_through(self) -> int:
        """The latest time of a change trimmed from the log (0: none was)."""
        return trimmed_through_time(self._trim_front())

    def check_held(self, position: LogPosition | int) -> None:
        """Whether the log still holds every change after ``position`` (a time, or an entry).
        Trimming only moves on: checked after a read from ``position``, it says the read
        missed nothing.

        Raises:
            LogTrimmedError: when it does not.
        """
        at = LogPosition.of(position)
        front = self._trim_front()
        if trimmed_past(front, at):
            trimmed = trimmed_through_time(front)
            raise LogTrimmedError(
                f"the change log of {self.unit} was trimmed through time {trimmed}, past "
                f"{at.text()}: the changes after it are gone",
                collection=self.unit,
                trimmed_through=trimmed,
                after=at.text(),
            )

    def _trim_front(self) -> EntryId | None:
        try:
            info = self._client.xinfo_stream(self._key)
        except redis.ResponseError:  # no log: nothing was ever written
            return None
        return trim_front(info)

    def _first_at(self, time: int) -> tuple[int, int | None] | None:
        """``(time, clock)`` of the first entry at ``time`` or later, None when none is."""
        entries = self._range("-" if time <= 0 else f"{time}-0", "+", 1)
        if not entries:
            return None
        raw_id, fields = entries[0]
        return entry_id(raw_id)[0], entry_clock(fields)

    def _pages(self, start: str, end: str) -> Iterator[LogEntries]:
        """The entries from ``start`` through ``end`` (``XRANGE`` bounds), a full page a
        call and a short one (maybe empty) last."""
        while True:
            entries = self._range(start, end, LOG_ENTRIES_PER_CALL)
            yield entries
            if len(entries) < LOG_ENTRIES_PER_CALL:
                return
            start = "(" + as_text(entries[-1][0])

    # The only calls that read the stream.

    def _range(self, start: str, end: str, count: int) -> LogEntries:
        return cast(LogEntries, self._client.xrange(self._key, min=start, max=end, count=count))

    def _range_back(self, end: str, count: int) -> LogEntries:
        return cast(LogEntries, self._client.xrevrange(self._key, max=end, min="-", count=count))
