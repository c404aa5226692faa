"""Temporal validity: rows appended with ``valid_until`` are retracted at that time
(docs/concepts/ttl-and-expiration.md).

Each row keeps a ledger ``valid_until -> diff`` of what is still to be retracted and when.
The *schedule* is the part of the ledger a consumer keeps ready (an ordered index of future
retractions). With an expiration (``consumer_start + offset``), retractions at or beyond
it are not scheduled: the ledger keeps them, and when the clock reaches the expiration the
schedule is rebuilt for the new horizon, so the output is the same with and without it
(seeds 000/002). A delete that retracts a row also drops its pending retractions: the row
is gone with its full multiplicity, nothing of it is left to expire.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from collection_manager.core.specs import Row

Update = tuple[Row, int]


class ValidityLedger:
    """Per row, the diffs still to be retracted at each ``valid_until`` (ms)."""

    def __init__(self) -> None:
        self._rows: dict[Row, dict[int, int]] = {}

    def add(self, valid_until: int, updates: Iterable[Update]) -> None:
        """Records that ``updates`` must be undone at ``valid_until``."""
        for row, diff in updates:
            entry = self._rows.setdefault(row, {})
            total = entry.get(valid_until, 0) + diff
            if total:
                entry[valid_until] = total
            else:
                entry.pop(valid_until, None)
            if not entry:
                del self._rows[row]

    def drop(self, rows: Iterable[Row]) -> None:
        """Forgets the pending retractions of ``rows`` (they were deleted)."""
        for row in rows:
            self._rows.pop(row, None)

    def due(self, now_ms: int, only: Callable[[Row], bool] | None = None) -> list[Update]:
        """Removes and returns the retractions due at ``now_ms`` (``valid_until <= now``),
        of the rows ``only`` accepts (default: all).

        Ordered by ``valid_until``, then by first appearance of the row.
        """
        due: list[tuple[int, Row, int]] = []
        for row, entry in list(self._rows.items()):
            if only is not None and not only(row):
                continue
            for valid_until in [v for v in entry if v <= now_ms]:
                due.append((valid_until, row, -entry.pop(valid_until)))
            if not entry:
                del self._rows[row]
        due.sort(key=lambda item: item[0])
        return [(row, diff) for _, row, diff in due]

    def scheduled(self, expiration: int | None) -> int:
        """How many retractions a schedule with this ``expiration`` holds (None: all)."""
        return sum(
            1
            for entry in self._rows.values()
            for valid_until in entry
            if expiration is None or valid_until < expiration
        )

    def __len__(self) -> int:
        return sum(len(entry) for entry in self._rows.values())
