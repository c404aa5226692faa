"""The change feed's positions (``changes.py``): what one is, how an event's ``id`` and an
answer's ``as_of`` write it, and whether the change log still holds every change after it.

A position is a collection time, or for a bucketed collection a cut (``12,40,7``). A log
trimmed past one is refused (410), never skipped: a client that reconnects with the last
``id`` it received must get every change after it or none.
"""

from __future__ import annotations

from typing import Any

from collection_manager.core.cut import Cut
from collection_manager.core.errors import LogTrimmedError
from collection_manager.core.specs import CollectionSpec
from collection_manager.http.problems import Problem
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.reads import CutChanges

Position = int | Cut


def position_text(position: Position) -> str:
    """A position as an event's id and an answer's ``as_of`` text."""
    return str(position) if isinstance(position, int) else position.text()


def position_json(position: Position) -> int | str:
    """A position as ``as_of`` in JSON: a time is a number, a cut a string."""
    return position if isinstance(position, int) else position.text()


def trimmed_past(
    client: Any, spec: CollectionSpec, position: Position, moved: Cut | None = None
) -> str | None:
    """Why the change log no longer holds every change after ``position``, or None when it
    does (of a bucketed collection: every bucket's log after its time in the cut; with
    ``moved``, the cut a read reached, only the buckets it moved: a log is trimmed only as
    entries are added, and a bucket that did not move is checked once it does).
    """
    if isinstance(position, int):
        try:
            ChangeLog(client, spec.name).check_held(position)
        except LogTrimmedError as exc:
            return why_trimmed(spec, exc)
        return None
    for bucket, unit in enumerate(spec.units()):
        if moved is not None and moved.times[bucket] <= position.times[bucket]:
            continue
        try:
            ChangeLog(client, unit.name).check_held(position.times[bucket])
        except LogTrimmedError as exc:
            return why_trimmed(spec, exc, bucket)
    return None


def why_trimmed(spec: CollectionSpec, trimmed: LogTrimmedError, bucket: int | None = None) -> str:
    """Which log (the collection's, or one bucket's) was trimmed, and through what."""
    if bucket is None:
        return f"the change log of {spec.name} was trimmed through time {trimmed.trimmed_through}"
    return (
        f"the change log of {spec.name}'s bucket {bucket} was trimmed through "
        f"{trimmed.trimmed_through}"
    )


def log_trimmed(why: str, position: Position, parameter: str | None) -> Problem:
    """The problem (410) of a position the log was trimmed past, and what to do instead."""
    return Problem(
        "log-trimmed",
        f"{why}, past {position_text(position)}: changes after it are gone; read the rows "
        "again (/rows) and follow the changes from their as_of",
        parameter=parameter,
    )


def at_least(changes: CutChanges, since: Cut) -> CutChanges:
    """``changes`` reaching ``since`` at least in every bucket (``tail``'s rule: a bucket
    whose readable time is still behind the cut asked for is not read twice)."""
    times = zip(changes.cut.times, since.times, strict=True)
    return CutChanges(changes.changes, Cut(tuple(max(pair) for pair in times)))
