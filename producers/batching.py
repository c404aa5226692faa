"""The agent's pure parts: rows tagged with the replica, batched into ``Append`` requests,
each split by bucket when its collection has several (``core/routing.py``).

No Kafka here: the subscribe threads (``producers.subscribe``) hand the requests to their
producer and record in a :class:`PublishedState` what the broker acknowledged.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence

from collection_manager.core.requests import Append
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec
from producers.simulated import Row, Update, apply_updates


def with_replica(replica_id: str, updates: Iterable[Update]) -> Iterator[Update]:
    """The updates with ``replica_id`` prepended to each row (introspection column 0)."""
    for row, diff in updates:
        yield (replica_id, *row), diff


def append_batches(
    collection: str,
    replica_id: str,
    epoch: int,
    updates: Iterable[Update],
    batch_rows: int,
    produced_at: int,
    ttl_ms: int | None = None,
) -> Iterator[Append]:
    """The updates as ``Append`` requests of at most ``batch_rows`` updates each, in order,
    each with ``ttl_ms``.

    Generated lazily, so a cancelled subscribe stops between two batches without having
    built the rest of a large snapshot. Rows must already carry ``replica_id``.

    Raises:
        ValueError: when ``batch_rows`` is not positive.
    """
    if batch_rows <= 0:
        raise ValueError(f"batch_rows must be positive, got {batch_rows}")
    batch: list[Update] = []
    for update in updates:
        batch.append(update)
        if len(batch) == batch_rows:
            yield Append(collection, replica_id, epoch, tuple(batch), produced_at, ttl_ms=ttl_ms)
            batch = []
    if batch:
        yield Append(collection, replica_id, epoch, tuple(batch), produced_at, ttl_ms=ttl_ms)


def bucket_parts(append: Append, spec: CollectionSpec | None) -> list[Append]:
    """``append`` as the requests to send: one per bucket its rows lie in (the parts of one
    group when several), or itself for a collection of one bucket.

    ``spec`` is the catalog's definition (the consumer's authority on the buckets); None
    when the agent was given none: the collection is taken to be unbucketed.
    """
    return [append] if spec is None else route_append(append, spec)


class PublishedState:
    """What an agent published and the broker acknowledged: rows per collection.

    Delivery reports arrive on the producer's polling thread; each adds its request's
    updates. Adding is commutative, so the order of reports does not matter.
    """

    def __init__(self, collections: Sequence[str] = ()) -> None:
        self._lock = threading.Lock()
        self._state: dict[str, Counter[Row]] = {name: Counter() for name in collections}

    def add(self, append: Append) -> None:
        """Adds an acknowledged request's updates."""
        with self._lock:
            apply_updates(self._state.setdefault(append.collection, Counter()), append.updates)

    def state(self) -> dict[str, Counter[Row]]:
        """A copy: the consolidated rows (with ``replica_id``) of every collection."""
        with self._lock:
            return {name: Counter(rows) for name, rows in self._state.items()}
