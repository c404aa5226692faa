"""What a read of the store returns: a snapshot at one time (or one cut), the changes
between two cuts, and the buckets a filter reads (``reads.StoreReader``'s answers)."""

from __future__ import annotations

import dataclasses

from collection_manager.core.cut import Cut
from collection_manager.core.filters import Filter
from collection_manager.core.routing import pinned_buckets
from collection_manager.core.specs import CollectionSpec
from collection_manager.core.stepped_read import Change
from collection_manager.storage.rows import Row


@dataclasses.dataclass(frozen=True)
class Snapshot:
    """A collection's contents at one time: ``as_of`` is its latest readable time.

    A bucketed collection's is read at one consistent ``cut`` (a time per bucket,
    ``core/cut.py``); its ``as_of`` is then the cut's total, which grows with every later
    cut.
    """

    rows: dict[Row, int]
    as_of: int
    cut: Cut | None = None

    @property
    def as_of_text(self) -> str:
        """How answers print the time: the time, or a bucketed collection's cut."""
        return str(self.as_of) if self.cut is None else self.cut.text()


@dataclasses.dataclass(frozen=True)
class CutChanges:
    """The changes of a bucketed collection between two cuts: ``(bucket, change)`` pairs,
    each bucket's oldest first, and the cut they reach."""

    changes: list[tuple[int, Change[Row]]]
    cut: Cut


def buckets_to_read(spec: CollectionSpec, where: Filter | None) -> list[int]:
    """The buckets whose rows may match ``where``: those it pins, else all of them."""
    pinned = None if where is None else pinned_buckets(where, spec.bucket_column, spec.buckets)
    return sorted(pinned) if pinned is not None else list(range(spec.buckets))


# One change of the change log: its time, row and diff.
LogEntry = Change[Row]
