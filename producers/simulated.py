"""A simulated compute replica: a deterministic source of true differential updates.

It stands in for a replica's introspection subscribes in tests, the demo and benchmarks.
Each collection is keyed (one row per key, multiplicity 1, as Materialize's introspection
relations are); a change of a key's value is emitted as the retraction of the old row and
the insertion of the new one, so every step is a valid differential update of the state:
nothing is ever retracted that is not there. Rows carry no ``replica_id``; the agent
prepends it. Everything random comes from one seeded ``random.Random``, so a seed fixes
the whole history.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Hashable, Iterable, Iterator
from typing import Any

Row = tuple[Any, ...]
Update = tuple[Row, int]

COMPUTE_FRONTIERS = "compute_frontiers"
ARRANGEMENT_SIZES = "arrangement_sizes"
ERROR_COUNTS = "error_counts"
HYDRATION_STATUS = "hydration_status"

#: Column names and Avro types of each collection's rows (without ``replica_id``).
COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    COMPUTE_FRONTIERS: (("export_id", "string"), ("worker_id", "long"), ("frontier", "long?")),
    ARRANGEMENT_SIZES: (
        ("operator_id", "long"),
        ("worker_id", "long"),
        ("records", "long"),
        ("batches", "long"),
        ("size_bytes", "long"),
    ),
    ERROR_COUNTS: (("export_id", "string"), ("count", "long")),
    HYDRATION_STATUS: (
        ("object_id", "string"),
        ("hydrated", "boolean"),
        ("hydration_time_ms", "long?"),
    ),
}

OPERATORS_PER_DATAFLOW = 3
_BYTES_PER_RECORD = 48


def apply_updates(state: Counter[Row], updates: Iterable[Update]) -> None:
    """Adds ``updates`` to the multiset ``state`` in place, dropping rows that reach zero."""
    for row, diff in updates:
        count = state[row] + diff
        if count:
            state[row] = count
        else:
            del state[row]


def _arrangement(records: int, batches: int) -> tuple[int, int, int]:
    return records, batches, records * _BYTES_PER_RECORD


class SimulatedReplica:
    """A replica with ``workers`` workers running ``dataflows`` dataflows.

    Args:
        workers: timely workers; frontiers and arrangements are per worker.
        dataflows: dataflows, each with one export (``u<i>``) and 3 arranged operators.
        seed: fixes every value and every change.
    """

    def __init__(self, workers: int = 4, dataflows: int = 8, seed: int = 0) -> None:
        self.workers = workers
        self.dataflows = dataflows
        self._rng = random.Random(seed)
        self._exports = [f"u{d}" for d in range(dataflows)]
        self._tick = 0
        # Per collection: key -> current row. Rows are unique per key, so the multiset
        # state is {row: 1 for row in values}.
        self._rows: dict[str, dict[Hashable, Row]] = {name: {} for name in COLUMNS}
        self._init_rows()

    def _init_rows(self) -> None:
        for export in self._exports:
            for worker in range(self.workers):
                self._rows[COMPUTE_FRONTIERS][export, worker] = (export, worker, 0)
            self._rows[HYDRATION_STATUS][export] = (export, False, None)
        for operator in range(self.dataflows * OPERATORS_PER_DATAFLOW):
            for worker in range(self.workers):
                records = self._rng.randrange(0, 10_000)
                sizes = _arrangement(records, self._rng.randrange(1, 8))
                self._rows[ARRANGEMENT_SIZES][operator, worker] = (operator, worker, *sizes)

    def snapshot(self) -> dict[str, list[Update]]:
        """The current state of every collection, as insertions."""
        return {name: [(row, 1) for row in rows.values()] for name, rows in self._rows.items()}

    def state(self) -> dict[str, Counter[Row]]:
        """The consolidated multiset of every collection: what this replica holds now."""
        return {name: Counter(rows.values()) for name, rows in self._rows.items()}

    def step(self) -> dict[str, list[Update]]:
        """Advances one tick and returns its changes, consolidated, per collection."""
        self._tick += 1
        return {
            COMPUTE_FRONTIERS: self._step_frontiers(),
            ARRANGEMENT_SIZES: self._step_arrangements(),
            ERROR_COUNTS: self._step_errors(),
            HYDRATION_STATUS: self._step_hydration(),
        }

    def _replace(self, collection: str, key: Hashable, new: Row | None) -> list[Update]:
        """Sets ``key``'s row (None deletes it) and returns the differential updates."""
        rows = self._rows[collection]
        old = rows.get(key)
        if old == new:
            return []
        updates: list[Update] = [] if old is None else [(old, -1)]
        if new is None:
            del rows[key]
        else:
            rows[key] = new
            updates.append((new, 1))
        return updates

    def _step_frontiers(self) -> list[Update]:
        updates: list[Update] = []
        for key, (export, worker, frontier) in list(self._rows[COMPUTE_FRONTIERS].items()):
            # Most workers advance every tick, some lag behind (frontiers never go back).
            if self._rng.random() < 0.8:
                advanced = frontier + self._rng.randrange(1, 1_000)
                updates += self._replace(COMPUTE_FRONTIERS, key, (export, worker, advanced))
        return updates

    def _step_arrangements(self) -> list[Update]:
        updates: list[Update] = []
        for key, (operator, worker, records, batches, _) in list(
            self._rows[ARRANGEMENT_SIZES].items()
        ):
            if self._rng.random() < 0.3:
                records = max(0, records + self._rng.randrange(-2_000, 2_500))
                # Merging shrinks the batch count, new data grows it.
                batches = max(1, batches + self._rng.choice((-2, -1, 1, 1, 2)))
                row = (operator, worker, *_arrangement(records, batches))
                updates += self._replace(ARRANGEMENT_SIZES, key, row)
        return updates

    def _step_errors(self) -> list[Update]:
        updates: list[Update] = []
        for export in self._exports:
            current = self._rows[ERROR_COUNTS].get(export)
            draw = self._rng.random()
            if draw < 0.1:
                count = (current[1] if current else 0) + self._rng.randrange(1, 5)
                updates += self._replace(ERROR_COUNTS, export, (export, count))
            elif draw < 0.15 and current is not None:
                # Errors resolved: the row goes away (only non-zero counts are rows).
                updates += self._replace(ERROR_COUNTS, export, None)
        return updates

    def _step_hydration(self) -> list[Update]:
        updates: list[Update] = []
        for export, (_, hydrated, _) in list(self._rows[HYDRATION_STATUS].items()):
            if not hydrated and self._rng.random() < 0.25:
                took_ms = self._tick * 1_000 + self._rng.randrange(0, 1_000)
                updates += self._replace(HYDRATION_STATUS, export, (export, True, took_ms))
        return updates


def large_snapshot(n_rows: int, workers: int = 16) -> Iterator[Update]:
    """``n_rows`` distinct ``arrangement_sizes`` insertions, generated lazily.

    For benchmarks: a snapshot too large to build in memory at once. Values derive from
    the row's position, so the stream is deterministic without a random generator.
    """
    for index in range(n_rows):
        operator, worker = divmod(index, workers)
        records = (index * 7_919) % 100_000
        yield (operator, worker, *_arrangement(records, 1 + index % 7)), 1
