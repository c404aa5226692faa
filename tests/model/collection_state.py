"""Differential collections: consolidation, state with multiplicities, delete retractions.

A collection's state is the sum of all its updates: every row with a non-zero total diff
(docs/concepts/collections-and-time.md). A negative total is an *invalid retraction*. Like
Materialize, the state keeps negative multiplicities (the sum is the truth; dropping them would make
later updates of the row wrong) and reports them through counters instead of raising.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Iterator, Mapping, Sequence

from collection_manager.core.filters import Filter, compile_filter
from collection_manager.core.requests import Update
from collection_manager.core.specs import Row
from tests.model.membership import ModelFences


@dataclasses.dataclass(frozen=True)
class ApplyOutcome:
    """What applying updates did.

    Attributes:
        written: non-zero updates applied (zero diffs are skipped, never written).
        invalid_retractions: retractions that left a row's multiplicity negative, where
            the row's replica has no fence.
        fenced_invalid_retractions: the same for rows of a fenced replica, which are
            expected while a replica shuts down (seed 001) and not reported as errors.
    """

    written: int = 0
    invalid_retractions: int = 0
    fenced_invalid_retractions: int = 0


def row_replica(row: Row) -> str | None:
    """The replica a row belongs to: column 0 when it is a string (as the store decides)."""
    return row[0] if row and isinstance(row[0], str) else None


class CollectionState:
    """A consolidated collection: row -> multiplicity, only non-zero entries.

    Rows keep their insertion order (a row that drops to zero and comes back goes to the
    end), which makes retraction order deterministic.
    """

    def __init__(self, rows: Mapping[Row, int] | None = None) -> None:
        self._rows: dict[Row, int] = {row: m for row, m in (rows or {}).items() if m != 0}

    def apply(self, updates: Iterable[Update], fences: ModelFences | None = None) -> ApplyOutcome:
        """Adds ``updates`` in order, counting invalid retractions.

        Args:
            updates: ``(row, diff)`` pairs.
            fences: decides whether an invalid retraction is a fenced one.
        """
        written = invalid = fenced = 0
        for row, diff in updates:
            if diff == 0:
                continue
            written += 1
            total = self._rows.get(row, 0) + diff
            if total == 0:
                del self._rows[row]
            else:
                self._rows[row] = total
            if total < 0 and diff < 0:
                if fences is not None and row_replica(row) in fences:
                    fenced += 1
                else:
                    invalid += 1
        return ApplyOutcome(written, invalid, fenced)

    def multiplicity(self, row: Row) -> int:
        """The row's multiplicity (0 when absent)."""
        return self._rows.get(row, 0)

    def rows(self) -> dict[Row, int]:
        """A copy of the contents."""
        return dict(self._rows)

    def negative_rows(self) -> dict[Row, int]:
        """Rows with a negative multiplicity (the pending invalid retractions)."""
        return {row: m for row, m in self._rows.items() if m < 0}

    def __iter__(self) -> Iterator[tuple[Row, int]]:
        return iter(list(self._rows.items()))

    def __len__(self) -> int:
        return len(self._rows)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CollectionState) and self._rows == other._rows

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"CollectionState({self._rows!r})"


def delete_retractions(
    state: CollectionState, node: Filter, columns: Sequence[str]
) -> list[Update]:
    """The retractions a delete with filter ``node`` appends (docs/concepts/deletes.md).

    Every matching row is retracted with its full multiplicity as of now, so afterwards no
    matching row remains; a row with a negative multiplicity gets a positive "retraction".

    Args:
        state: the collection just before the delete.
        node: the delete's filter.
        columns: the collection's column names, in row order.

    Raises:
        FilterError: when the filter does not fit the columns.
    """
    matches = compile_filter(node, columns)
    return [(row, -m) for row, m in state if matches(row)]
