"""A read at one time made of bounded steps that each answer at their own time.

No Redis call may do work in proportion to a collection's size, so a large read scans in
steps, and writes go on between them: each step answers at the time the collection is at
then, and a row that changed during the scan may be seen twice, at two multiplicities, or
not at all (a scan promises only the rows present all along). The change log makes one time
of it (docs/concepts/reads.md, "Reads in bounded steps"):

- every multiplicity seen at time ``t`` is moved to the read's time ``T`` by the log's
  changes between ``t`` and ``T`` (forwards or backwards);
- a row with no change in the span of ``T`` and the steps' times kept one multiplicity all
  along: if it had one, the scan saw it, and if the scan did not see it, it had none;
- a row with a change in that span may have been missed: it is looked at once more.

The steps come from a :class:`StepReads` (Redis in ``storage/step_reads.py``, an in-memory
adversary in the tests); this module only decides what to ask and how to combine it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from typing import Generic, Protocol, TypeVar

from collection_manager.core.errors import CollectionManagerError

RowT = TypeVar("RowT", bound=Hashable)

# How many rows a second look asks for in one call.
COUNTS_PER_CALL = 2_000


class SteppedReadError(CollectionManagerError):
    """A stepped read cannot give one consistent time (a restart, a trimmed log, a wait)."""


class ServerChanged(SteppedReadError):
    """The scan met another server (a restart or a failover): its cursor means nothing there."""


@dataclasses.dataclass(frozen=True)
class Change(Generic[RowT]):
    """One change of the log: ``row``'s multiplicity moved by ``diff`` at ``time``."""

    time: int
    row: RowT
    diff: int


@dataclasses.dataclass(frozen=True)
class Span:
    """A stretch ``[start, end)`` of a scan's order (``core/scan_order.py``): positions
    are ``(key, place)`` pairs, a scan going through several keys one after another."""

    start: tuple[int, int]
    end: tuple[int, int]

    def overlaps(self, other: Span) -> bool:
        return self.start < other.end and other.start < self.end


@dataclasses.dataclass(frozen=True)
class ScanStep(Generic[RowT]):
    """One step of a scan: the rows it found with their multiplicities at ``time``.

    ``cursor`` is where the next step starts (None: the scan is done); ``server`` names the
    server that answered, whose cursor it is. ``covers`` is the stretch of the scan's
    order its rows lie in, and ``again`` the part of it before where the step was asked to
    start, which it may have scanned before (a table that shrank since the step before):
    a row found there may have been found already. Both are None for a scan that says
    nothing of its order (and so never returns a row twice).
    """

    time: int
    server: str
    cursor: object | None
    rows: Mapping[RowT, int]
    covers: Span | None = None
    again: Span | None = None


class StepReads(Protocol[RowT]):
    """The bounded calls a stepped read is made of, for one collection and one filter."""

    def scan(self, cursor: object | None) -> ScanStep[RowT]:
        """The next step of the scan (``None``: the first)."""
        ...

    def counts(self, rows: Sequence[RowT]) -> tuple[int, list[int]]:
        """The time and the multiplicities of ``rows`` then (0 for an absent row)."""
        ...

    def readable(self) -> int:
        """The latest readable time: the log is whole up to it."""
        ...

    def changes(self, after: int, through: int) -> Iterable[Change[RowT]]:
        """The log's changes at times in ``(after, through]``, oldest first."""
        ...

    def trimmed_through(self) -> int:
        """The latest time of a change the log no longer holds (0: none was trimmed)."""
        ...

    def wanted(self, row: RowT) -> bool:
        """Whether the read asks for ``row`` (its filter, its part of a split read)."""
        ...


def read_at(
    reads: StepReads[RowT],
    as_of: int,
    wait_readable: Callable[[int], None],
    limit: int | None = None,
) -> dict[RowT, int]:
    """The wanted rows and their multiplicities at time ``as_of`` (at most ``limit`` of
    them: the first the scan finds, each exact, and the scan stops there).

    ``wait_readable(t)`` returns once ``reads.readable() >= t`` (or raises): a step can
    answer at the time of a delete still in progress, whose changes the log holds only when
    it is done.

    Raises:
        ServerChanged: when the scan met another server; start again.
        SteppedReadError: when the log no longer holds the changes the read needs.
    """
    seen: _Seen[RowT] = _Seen(as_of)
    cursor: object | None = None
    server: str | None = None
    while True:
        step = reads.scan(cursor)
        if server is not None and step.server != server:
            raise ServerChanged(f"the scan met another Redis server ({step.server})")
        server = step.server
        seen.add(step.rows, step.time)
        if step.cursor is None:
            break
        cursor = step.cursor
        if limit is not None and len(seen.counts) >= limit:
            # Enough rows seen, if the changes since leave enough of them: a row missed
            # is not needed, any `limit` rows of the snapshot will do.
            some = seen.settle(reads, wait_readable, second_look=False)
            if len(some) >= limit:
                return dict(itertools.islice(some.items(), limit))
    whole = seen.settle(reads, wait_readable, second_look=True)
    return whole if limit is None else dict(itertools.islice(whole.items(), limit))


class _Seen(Generic[RowT]):
    """The rows a read has seen, each with its multiplicity and the time it was seen at."""

    def __init__(self, as_of: int) -> None:
        self.as_of = as_of
        self.counts: dict[RowT, int] = {}
        self.times: dict[RowT, int] = {}
        self.low = self.high = as_of  # the span of as_of and every time seen at

    def add(self, rows: Mapping[RowT, int], time: int) -> None:
        self.counts.update(rows)
        self.times.update(dict.fromkeys(rows, time))
        self.low, self.high = min(self.low, time), max(self.high, time)

    def settle(
        self,
        reads: StepReads[RowT],
        wait_readable: Callable[[int], None],
        second_look: bool,
    ) -> dict[RowT, int]:
        """The rows seen, moved to ``as_of``; with ``second_look``, and every wanted row
        that changed while the scan went (which it may have missed)."""
        low, high = self.low, self.high
        if high > low:  # the log is needed up to high: whole only once it is readable
            wait_readable(high)
        changes = list(reads.changes(low, high))
        if second_look:
            missed = {c.row for c in changes if c.row not in self.counts and reads.wanted(c.row)}
            for chunk in _chunks(list(missed), COUNTS_PER_CALL):
                time, found = reads.counts(chunk)
                self.add(dict(zip(chunk, found, strict=True)), time)
            if self.high > high:
                wait_readable(self.high)
                changes.extend(reads.changes(high, self.high))
        trimmed = reads.trimmed_through()
        if trimmed > low:
            raise SteppedReadError(
                f"the change log no longer holds the changes after time {low} that the "
                f"read needs (trimmed through {trimmed}): the collection changed faster "
                "than the read went; read again"
            )
        return moved_to(self.as_of, self.counts, self.times, changes)


def moved_to(
    as_of: int,
    counts: Mapping[RowT, int],
    times: Mapping[RowT, int],
    changes: Iterable[Change[RowT]],
) -> dict[RowT, int]:
    """Each seen row's multiplicity at ``as_of`` (rows at zero left out).

    ``counts[row]`` is the multiplicity ``row`` had when it was seen, at ``times[row]``;
    ``changes`` must hold every change of a seen row between that time and ``as_of``. A
    change after ``as_of`` that the row was seen after is undone; one after the row was
    seen, up to ``as_of``, is applied.
    """
    result = dict(counts)
    for change in changes:
        seen_at = times.get(change.row)
        if seen_at is None:
            continue
        if as_of < change.time <= seen_at:
            result[change.row] -= change.diff
        elif seen_at < change.time <= as_of:
            result[change.row] += change.diff
    zeros = [row for row, count in result.items() if count == 0]
    for row in zeros:
        del result[row]
    return result


def _chunks(items: list[RowT], size: int) -> Iterable[list[RowT]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]
