"""One read for several collections: per-collection views of a source that reads them all.

An agent steps each collection from its own thread (:mod:`producers.subscribe`). A source
that gets every collection from one read (one scrape of a ``/metrics`` page) must not read
once per collection: the first view that steps reads, and the others take their part of
that read when they step. Each view returns every update of its collection exactly once,
in order, so what it publishes is a valid differential stream even when one view falls a
step behind (it then gets two reads' updates at once).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from producers.simulated import Update
from producers.subscribe import Source


class SharedSource:
    """Splits one source's snapshot and steps into a source per collection.

    Args:
        source: its ``snapshot`` and ``step`` answer every collection of ``collections``.
        collections: the collections to split into.
    """

    def __init__(self, source: Source, collections: Sequence[str]) -> None:
        self._source = source
        self._lock = threading.Lock()
        self._snapshot: Mapping[str, Sequence[Update]] | None = None
        self._snapshot_due = set(collections)  # the views yet to take their part of it
        self._pending: dict[str, list[Update]] = {name: [] for name in collections}
        self._taken: dict[str, bool] = {name: True for name in collections}

    def views(self) -> dict[str, Source]:
        """A source per collection."""
        return {name: _View(self, name) for name in self._pending}

    def snapshot(self, collection: str) -> list[Update]:
        """The snapshot's part of ``collection``; the source takes one snapshot for all."""
        with self._lock:
            if self._snapshot is None:
                self._snapshot = self._source.snapshot()
            part = list(self._snapshot.get(collection, ()))
            self._snapshot_due.discard(collection)
            if not self._snapshot_due:
                self._snapshot = {}  # all taken: not kept for the agent's lifetime
            return part

    def step(self, collection: str) -> list[Update]:
        """What ``collection`` has not taken yet; a new read when it took the last one."""
        with self._lock:
            if self._taken[collection]:
                for name, updates in self._source.step().items():
                    if name in self._pending:
                        self._pending[name].extend(updates)
                        self._taken[name] = False
                self._taken[collection] = False
            updates, self._pending[collection] = self._pending[collection], []
            self._taken[collection] = True
            return updates


class _View:
    """The :class:`~producers.subscribe.Source` of one collection of a shared source."""

    def __init__(self, shared: SharedSource, collection: str) -> None:
        self._shared = shared
        self._collection = collection

    def snapshot(self) -> dict[str, list[Update]]:
        return {self._collection: self._shared.snapshot(self._collection)}

    def step(self) -> dict[str, list[Update]]:
        return {self._collection: self._shared.step(self._collection)}
