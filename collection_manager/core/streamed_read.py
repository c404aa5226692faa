"""A stepped read at one time, handed on a step at a time: memory bounded by a step and the
changes made while it reads, never by the collection's size.

``read_at`` (``stepped_read.py``) keeps every row it saw until the end, because a row that
changed while the scan went may have been seen at another multiplicity, or missed. Here a
row is handed on as soon as its step comes, moved to ``as_of`` by the log read so far:

- a step's row with no change in the span of ``as_of`` and every step's time so far kept
  its multiplicity from ``as_of`` to the step: it is exact now, and is handed on at once;
- a row with a change in that span is held (the rows held are bounded by the changes made
  during the read, which the change log bounds), and at the end every wanted row that
  changed is settled at ``as_of`` as ``read_at`` settles it (a second look for those not
  seen since their change), and handed on unless it was already.

Whether it was already is the one thing a bounded reader cannot keep in memory: the rows
handed on are recorded in an :class:`Emitted` (a file of fingerprints on Redis,
``storage/streamed.py``), each step's with the stretch of the scan's order it covers.
It is asked about at the end, for the rows that changed, and by a step that may have
scanned again a stretch scanned before (a Redis table that shrank between two steps
returns again some elements just before its cursor, ``core/scan_order.py``): that step's
rows found before, in the steps that cover the stretch, are not handed on again. So every
row goes once, whatever a table does under the read.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Iterable, Iterator, Set
from typing import Generic, Protocol

from collection_manager.core.stepped_read import (
    COUNTS_PER_CALL,
    Change,
    RowT,
    ScanStep,
    ServerChanged,
    Span,
    SteppedReadError,
    StepReads,
    moved_to,
)


class Emitted(Protocol[RowT]):
    """What a streamed read has handed on, step by step."""

    def add(self, rows: Iterable[RowT], covers: Span | None) -> None:
        """Records ``rows`` as handed on, found in the stretch ``covers`` of the scan's
        order (None: not by the scan)."""
        ...

    def among(self, rows: Set[RowT], within: Span | None = None) -> set[RowT]:
        """Which of ``rows`` were handed on (with ``within``: by the steps whose stretch
        overlaps it)."""
        ...


class EmittedInMemory(Generic[RowT]):
    """An :class:`Emitted` in sets: for tests and small reads."""

    def __init__(self) -> None:
        self.steps: list[tuple[Span | None, set[RowT]]] = []

    def add(self, rows: Iterable[RowT], covers: Span | None) -> None:
        self.steps.append((covers, set(rows)))

    def among(self, rows: Set[RowT], within: Span | None = None) -> set[RowT]:
        found: set[RowT] = set()
        for covers, handed in self.steps:
            if within is None or (covers is not None and covers.overlaps(within)):
                found |= handed & rows
        return found


class _Log(Generic[RowT]):
    """The change log's changes in ``(low, high]``, the span of ``as_of`` and every time
    read at so far, by row."""

    def __init__(self, reads: StepReads[RowT], as_of: int, wait: Callable[[int], None]) -> None:
        self._reads, self._wait = reads, wait
        self.as_of = self.low = self.high = as_of
        self.by_row: dict[RowT, list[Change[RowT]]] = {}

    def cover(self, time: int) -> None:
        """Reads the changes that ``time`` adds to the span (none when it is inside)."""
        if time > self.high:
            self._wait(time)  # the log is whole only up to the readable time
            self._add(self._reads.changes(self.high, time))
            self.high = time
        elif time < self.low:
            self._add(self._reads.changes(time, self.low))
            self.low = time
        else:
            return
        self._check_trim()

    def _add(self, changes: Iterable[Change[RowT]]) -> None:
        for change in changes:
            self.by_row.setdefault(change.row, []).append(change)

    def _check_trim(self) -> None:
        # Checked after the log was read: trimming only moves on, so a log trimmed no
        # further than `low` now held every change read.
        trimmed = self._reads.trimmed_through()
        if trimmed > self.low:
            raise SteppedReadError(
                f"the change log no longer holds the changes after time {self.low} that the "
                f"read needs (trimmed through {trimmed}): the collection changed faster "
                "than the read went; read again"
            )

    def changes(self) -> Iterator[Change[RowT]]:
        return itertools.chain.from_iterable(self.by_row.values())


def stream_at(
    reads: StepReads[RowT],
    as_of: int,
    wait_readable: Callable[[int], None],
    emitted: Emitted[RowT],
    limit: int | None = None,
) -> Iterator[dict[RowT, int]]:
    """The wanted rows at time ``as_of`` with their multiplicities, a step's at a time:
    each row once, exact, in the order the scan finds them (at most ``limit``; the scan
    stops there). Nothing is read before the caller asks for the next step.

    Raises:
        ServerChanged: when the scan met another server (the steps handed on stand).
        SteppedReadError: when the log no longer holds the changes the read needs.
    """
    log: _Log[RowT] = _Log(reads, as_of, wait_readable)
    held: dict[RowT, tuple[int, int]] = {}  # changed rows seen: (multiplicity, time seen)
    left = limit
    cursor: object | None = None
    server: str | None = None
    while True:
        step = reads.scan(cursor)
        server = _same_server(server, step.server)
        log.cover(step.time)
        exact = _exact_now(step, log, held, emitted)
        if exact:
            if left is not None:
                exact = dict(itertools.islice(exact.items(), left))
                left -= len(exact)
            emitted.add(exact, step.covers)
            yield exact
            if left == 0:
                return
        if step.cursor is None:
            break
        cursor = step.cursor
    rest = _settled_rest(reads, log, held, emitted, left)
    if rest:
        emitted.add(rest, None)
        yield rest


def _settled_rest(
    reads: StepReads[RowT],
    log: _Log[RowT],
    held: dict[RowT, tuple[int, int]],
    emitted: Emitted[RowT],
    left: int | None,
) -> dict[RowT, int]:
    """The rows that changed during the read, settled at ``as_of``, less those handed on
    already (at most ``left``)."""
    settled = _settle(reads, log, held)
    again = emitted.among(settled.keys())
    rest = {row: count for row, count in settled.items() if row not in again}
    return rest if left is None else dict(itertools.islice(rest.items(), left))


def _same_server(before: str | None, now: str) -> str:
    if before is not None and now != before:
        raise ServerChanged(f"the scan met another Redis server ({now})")
    return now


def _exact_now(
    step: ScanStep[RowT],
    log: _Log[RowT],
    held: dict[RowT, tuple[int, int]],
    emitted: Emitted[RowT],
) -> dict[RowT, int]:
    """The rows of ``step`` to hand on now: those with no change in the log's span, less
    those a step before handed on (a stretch scanned again). The changed ones go to
    ``held``, to be settled at the end."""
    exact = {}
    for row, count in step.rows.items():
        if row in log.by_row:
            held[row] = (count, step.time)
        else:
            exact[row] = count
    if exact and step.again is not None:  # found again after a shrink: handed on once
        for row in emitted.among(exact.keys(), step.again):
            del exact[row]
    return exact


def _settle(
    reads: StepReads[RowT], log: _Log[RowT], held: dict[RowT, tuple[int, int]]
) -> dict[RowT, int]:
    """Every wanted row that changed in the read's span, at ``as_of``: those seen after a
    change from what was seen, the others from a second look (they may have been missed)."""
    counts = {row: count for row, (count, _) in held.items()}
    times = {row: time for row, (_, time) in held.items()}
    unseen = [row for row in log.by_row if row not in held and reads.wanted(row)]
    for start in range(0, len(unseen), COUNTS_PER_CALL):
        chunk = unseen[start : start + COUNTS_PER_CALL]
        time, found = reads.counts(chunk)
        log.cover(time)
        counts.update(zip(chunk, found, strict=True))
        times.update(dict.fromkeys(chunk, time))
    return moved_to(log.as_of, counts, times, log.changes())
