"""Dropping a collection in bounded steps, deleting exactly its keys, never by pattern.

A pattern (``SCAN MATCH cm:{<name>}:idx:*``) treats glob characters in the name as globs
and would delete other collections' keys; names are checked now (``core/names.py``), but
a delete must not depend on that. The index sets are derived from the collection's rows.

A drop first records its state (``CollectionKeys.dropping``) and removes the collection's
definition from the catalog: from then on nobody reads or writes it, and requests naming it
are dead letters. Then ``cm_drop`` removes ``DROP_STEP_ROWS`` rows (and their index
entries) a call until none is left, and then every key of the collection. No call holds
Redis for longer than one step, however large the collection, and after each step the
drop waits half as long as the step took, so that it never keeps Redis busy more than
about two thirds of the time. A drop that stopped half way (a killed command) is finished
by the next drop or create of that name.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable

import redis

from collection_manager.core.buckets import split_unit, unit_names
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import as_text
from collection_manager.storage.keys import CATALOG, CollectionKeys, cut_key
from collection_manager.storage.library import DROP, call
from collection_manager.storage.ops import function_call

# The index layout depends on the columns only: a placeholder name lets a collection whose
# name predates the name rule be dropped too.
_LAYOUT_NAME = "layout"
# Rows one cm_drop call removes (with their index entries).
DROP_STEP_ROWS = 500
# The drop's share of Redis's time at most: after a step it waits (1 - share) / share times
# as long as the step took (at 2/3, half as long). Back to back, the steps of a
# ten-million-row drop (about 4 ms each) kept Redis about 80% busy for 100 s, and a reader
# asking every 5 ms fell up to 2 s behind, though no reply took Redis more than 95 ms
# (bench/reader_latency.py; bench/notes.md, 2026-11-26). A drop is not urgent: its
# collection left the catalog before its first step.
DROP_REDIS_SHARE = 2 / 3
# The field of a bucketed collection's own drop state that holds how many buckets it had.
BUCKETS_FIELD = "buckets"


class CollectionDrop:
    """Drops collections.

    Args:
        client: a Redis client.
    """

    def __init__(
        self,
        client: redis.Redis,
        step_rows: int = DROP_STEP_ROWS,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        self._client = client
        self._step_rows = step_rows
        self._pause = pause

    def drop(self, collection: str) -> None:
        """Removes ``collection``'s definition, then its keys in steps (or finishes a drop
        of that name that stopped half way). A bucketed collection's buckets each drop as
        a collection does; the drop records how many there are (``BUCKETS_FIELD``)."""
        raw = self._client.hget(CATALOG, collection)
        if raw is not None:
            record = json.loads(raw)
            layout = CollectionSpec(_LAYOUT_NAME, record["row_schema"], record["indexed_columns"])
            indexed = json.dumps(json.loads(function_call([], layout).payload)["ic"])
            buckets = int(record.get("buckets", 1))
            if buckets > 1:
                self._client.hsetnx(CollectionKeys(collection).dropping, BUCKETS_FIELD, buckets)
            # Kept if a drop before this one stopped half way: its rows have that layout.
            for unit in unit_names(collection, buckets):
                self._client.hsetnx(CollectionKeys(unit).dropping, "ic", indexed)
            self._client.hdel(CATALOG, collection)
        self.finish(collection)

    def finish(self, collection: str) -> None:
        """Runs the drop of ``collection`` in progress, if any, to its end."""
        state = CollectionKeys(collection).dropping
        buckets = self._client.hget(state, BUCKETS_FIELD)
        if buckets is None:
            self._finish_unit(collection)
            return
        for unit in unit_names(collection, int(buckets)):
            self._finish_unit(unit)
        self._client.unlink(cut_key(collection), state)

    def _finish_unit(self, unit: str) -> None:
        keys = CollectionKeys(unit)
        if not self._client.exists(keys.dropping):
            # No drop and no definition: only the fixed keys can be there (a definition
            # that never was, or whose drop predates the steps).
            if self._client.hget(CATALOG, split_unit(unit)[0]) is None:
                self._client.unlink(*keys.function_keys())
            return
        while True:
            args: list[str | int] = [keys.index_prefix, self._step_rows]
            started = time.monotonic()
            reply = call(self._client, DROP, [*keys.function_keys(), keys.dropping], args)
            if as_text(reply) == "done":
                return
            took = time.monotonic() - started
            self._pause(took * (1 - DROP_REDIS_SHARE) / DROP_REDIS_SHARE)
