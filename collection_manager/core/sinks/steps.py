"""How the changes a sink reads are cut into Kafka transactions.

Each transaction ends where the collection is whole: a reader of committed records sees
the collection at that position, never a part of a request group.

- Unbucketed, every time is such a place (a time is one request group, whole in the log
  once readable), so a long stretch is cut at time boundaries into transactions of at
  most ``bound`` changes (more only when one time holds more).
- Bucketed, only a consistent cut is (a delete sent to every bucket is a part in each),
  and the cuts between two that were read are not known (their parts are trimmed once
  settled): the whole step is one transaction, and a step of more than ``bound`` changes
  is refused (:class:`StepTooLarge`), as a sink that fell that far behind cannot publish
  it whole. A sink that keeps up steps one settle (about 0.5 s) at a time.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from collection_manager.core.cut import Cut
from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.stepped_read import Change

RowT = TypeVar("RowT")
Placed = tuple[int | None, Change[RowT]]  # (bucket, change); bucket None: unbucketed


class StepTooLarge(CollectionManagerError):
    """A bucketed collection's step holds more changes than one transaction may."""


def transactions(
    changes: Iterable[Placed[RowT]], through: Cut, bucketed: bool, bound: int
) -> Iterator[tuple[list[Placed[RowT]], Cut]]:
    """The transactions of one step: each one's changes and the position it reaches, the
    last reaching ``through``.

    Args:
        changes: the step's changes, each bucket's (or the collection's) oldest first.
        through: where the step ends.
        bucketed: whether the collection is (then the step is one transaction).
        bound: the most changes of a transaction (``CM_SINK_MAX_TRANSACTION_CHANGES``).

    Raises:
        StepTooLarge: when a bucketed step holds more than ``bound`` changes.
    """
    if bucketed:
        step: list[Placed[RowT]] = []
        for placed in changes:
            step.append(placed)
            if len(step) > bound:
                raise StepTooLarge(
                    f"the step to cut {through.text()} holds more than {bound} changes, the "
                    "most of one transaction (CM_SINK_MAX_TRANSACTION_CHANGES): a bucketed "
                    "collection's step is published whole"
                )
        yield step, through
        return
    yield from _at_time_boundaries(changes, through, bound)


def _at_time_boundaries(
    changes: Iterable[Placed[RowT]], through: Cut, bound: int
) -> Iterator[tuple[list[Placed[RowT]], Cut]]:
    batch: list[Placed[RowT]] = []  # the changes of whole times, not yet published
    run: list[Placed[RowT]] = []  # the changes of the time being read
    for placed in changes:
        if run and placed[1].time > run[-1][1].time:
            if batch and len(batch) + len(run) > bound:
                yield batch, Cut((batch[-1][1].time,))
                batch = []
            batch, run = batch + run, []
        run.append(placed)
    if batch and len(batch) + len(run) > bound:
        yield batch, Cut((batch[-1][1].time,))
        batch = []
    yield batch + run, through
