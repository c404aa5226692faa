"""Where ``collections tail`` starts, and where the next read goes on after it.

``--since`` is a time, a bucketed collection's cut, or a duration (the changes applied in
the last ``5m``, by the clock the log records, ``storage/log_clock.py``); the cut a
bucketed read returns is cut back to ``-n`` changes (:func:`at_most`) and never behind the
cut asked for (:func:`at_least`).
"""

from __future__ import annotations

import argparse
import re

from collection_manager.config.errors import UsageError
from collection_manager.core.cut import Cut, CutError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.reads import CutChanges

# A duration's units, in ms.
DURATION_UNITS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
DURATION_SHAPE = "a duration: a whole number and a unit, s, m, h or d (30s, 5m, 2h, 1d)"
SINCE_SHAPE = (
    "a time (0 or more), or for a bucketed collection a cut as its as_of prints it: a time "
    f"per bucket joined by commas, such as 12,40,7; or {DURATION_SHAPE}"
)
# What looks like a duration, with a unit we may not take (1.5h, 10ms, 1w).
_DURATION = re.compile(r"(\d+(?:\.\d*)?)\s*([a-zA-Z]+)")


def duration_ms(text: str) -> int | None:
    """The ms of a duration (``30s``, ``5m``, ``2h``, ``1d``); None when ``text`` is not
    shaped as one (a time, a cut).

    Raises:
        argparse.ArgumentTypeError: when it is shaped as one, in a unit not taken.
    """
    shaped = _DURATION.fullmatch(text.strip())
    if shaped is None:
        return None
    count, unit = shaped.groups()
    if not count.isdigit() or unit not in DURATION_UNITS:
        raise argparse.ArgumentTypeError(f"give {DURATION_SHAPE}, not {text!r}")
    return int(count) * DURATION_UNITS[unit]


def since_argument(text: str) -> str:
    """An argparse type: a time (0 or later), times joined by commas (a cut), or a duration;
    whether a time or a cut fits depends on the collection (:func:`parse_since`, once it is
    known)."""
    if duration_ms(text) is not None:
        return text
    for piece in text.split(","):
        try:
            value = int(piece)
        except ValueError:
            raise argparse.ArgumentTypeError(f"give {SINCE_SHAPE}, not {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"times start at 0, not {value}")
    return text


def parse_since(text: str | None, spec: CollectionSpec) -> int | Cut | None:
    """``--since`` of ``spec``: a time for an unbucketed collection; for a bucketed one a
    cut (``0`` alone: its start), whose changes after it are wanted. None: not given.

    Raises:
        UsageError: when it does not have the shape the collection's reads take.
    """
    if text is None:
        return None
    if spec.buckets == 1:
        if "," in text:
            raise UsageError(
                f"argument --since: {spec.name} has one bucket: give a time (0 or more), "
                f"not the cut {text!r}"
            )
        return int(text)
    if text.strip() == "0":
        return Cut((0,) * spec.buckets)
    try:
        return Cut.parse(text, spec.buckets)
    except CutError as exc:
        raise UsageError(f"argument --since: {exc}") from None


def at_least(changes: CutChanges, since: Cut) -> CutChanges:
    """``changes`` reaching ``since`` at least in every bucket: where a bucket's readable
    time is still behind the cut asked for (a query's cut during a delete in progress, a
    cut typed ahead), going on from the cut returned reads nothing of it twice."""
    times = zip(changes.cut.times, since.times, strict=True)
    return CutChanges(changes.changes, Cut(tuple(max(pair) for pair in times)))


def at_most(changes: CutChanges, count: int) -> CutChanges:
    """The first ``count`` of ``changes`` (bucket order, each bucket's oldest first) and
    the cut to go on after them: a bucket keeps the cut read through, or stops just before
    its first change left out. A time cut short is then read again whole by the next read:
    a cut holds whole times only."""
    if len(changes.changes) <= count:
        return changes
    reached = list(changes.cut.times)
    for bucket, change in reversed(changes.changes[count:]):
        reached[bucket] = change.time - 1
    return CutChanges(changes.changes[:count], Cut(tuple(reached)))
