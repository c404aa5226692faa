"""Positions in a change log, and how far trimming reached: arithmetic on entry ids
(``<time>-<seq>``, ``change_log.py``), no Redis call.

A *position* in one log is where its reader stands: after a time (every change at it and
before was read) or after one entry (:class:`LogPosition`), which a follower that stopped
inside a time of several entries records.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from collection_manager.storage.client import as_text

# The highest sequence number of an entry id: a position after it is after its whole time.
LAST_SEQ = 2**64 - 1
# An entry id, ``(time, seq)``.
EntryId = tuple[int, int]


@dataclasses.dataclass(frozen=True, order=True)
class LogPosition:
    """Where a reader of one change log stands: after entry ``time-seq``; after every entry
    of ``time`` when ``seq`` is :data:`LAST_SEQ` (the default: a time as a position)."""

    time: int
    seq: int = LAST_SEQ

    def __post_init__(self) -> None:
        if self.time < 0 or not 0 <= self.seq <= LAST_SEQ:
            raise ValueError(f"no change-log position {self.time}-{self.seq}")

    @classmethod
    def of(cls, position: LogPosition | int) -> LogPosition:
        """``position``, a time taken as the position after it."""
        return position if isinstance(position, LogPosition) else cls(position)

    @classmethod
    def parse(cls, text: str) -> LogPosition:
        """The position :meth:`text` wrote: ``12`` (after time 12) or ``12-3`` (after that
        entry).

        Raises:
            ValueError: when ``text`` is neither.
        """
        time, dash, seq = text.strip().partition("-")
        try:
            return cls(int(time), int(seq)) if dash else cls(int(time))
        except ValueError:
            raise ValueError(
                f"a change-log position is a time or an entry id <time>-<seq>, not {text!r}"
            ) from None

    @property
    def whole_time(self) -> bool:
        """Whether it stands after every entry of its time."""
        return self.seq == LAST_SEQ

    def text(self) -> str:
        """``12`` after a whole time, ``12-3`` after an entry."""
        return str(self.time) if self.whole_time else f"{self.time}-{self.seq}"

    def start(self) -> str:
        """The ``XRANGE`` start of the entries after it."""
        return f"{self.time + 1}-0" if self.whole_time else f"({self.time}-{self.seq}"

    def successor(self) -> EntryId:
        """The first entry id after it."""
        return (self.time + 1, 0) if self.whole_time else (self.time, self.seq + 1)


def entry_id(raw: bytes | str) -> EntryId:
    """The ``(time, seq)`` of an entry id as Redis gives it."""
    time, seq = as_text(raw).split("-")
    return int(time), int(seq)


def trim_front(info: Mapping[str, Any]) -> EntryId | None:
    """Of a log's ``XINFO STREAM``: the first entry id that trimming has not reached, None
    when nothing was trimmed. Every entry before it went (or may have: which ids a trimmed
    entry had is not known).

    Redis counts the entries ever added, so whether any went is known, and trimming takes
    the oldest: the first entry left, or after the last id given when none is left.
    (``max-deleted-entry-id`` would say more, but trimming does not move it.)
    """
    if int(info["entries-added"]) == int(info["length"]):
        return None
    if not info["first-entry"]:
        time, seq = entry_id(info["last-generated-id"])
        return (time, seq + 1)
    return entry_id(info["first-entry"][0])


def trimmed_through_time(front: EntryId | None) -> int:
    """The latest time of a change trimmed (0: none was), of a :func:`trim_front`: before
    the first entry left; at its own time only when it is not the time's first entry."""
    if front is None:
        return 0
    time, seq = front
    return time if seq > 0 else time - 1


def trimmed_past(front: EntryId | None, position: LogPosition) -> bool:
    """Whether an entry after ``position`` may have been trimmed (``front``: ``trim_front``).
    For a time, just when ``trimmed_through_time(front) > position.time``."""
    return front is not None and front > position.successor()
