"""TTL state whose secondary (expiry) index stays tight.

State with a time to live keeps two structures: a *primary* index (key to value and
expiry) and a *secondary* index ordered by expiry, so that cleanup reads only the front of
the secondary index instead of scanning every key. The classic mistake, described in
SPARK-50302, is to append to the secondary index on every write: a key written n times then
owns n index entries, and cleanup re-reads (and for lists re-walks) the key for each stale
one. Here the secondary index is *tight*:

- :class:`OneToOneTtl` (one expiry per key): a write **replaces** the key's index entry and a
  removal deletes it, so the index never holds more entries than the primary.
- :class:`OneToManyTtl` (several expiring elements per key, like a list): the index holds
  only the **minimum** expiry of each key. Cleanup walks an expired key's elements once,
  drops the expired ones and re-indexes the key at its new minimum. Removing a key also
  deletes its index entry, so a key removed and re-added is never evicted at its old expiry.

Cleanup work is proportional to what expires, never to the number of past writes;
:class:`CleanupStats` reports that work so tests and benchmarks can check it.
:class:`AppendOnlyTtlIndex` is the deliberately naive **baseline** (one index entry per
write) that benchmarks compare index size and cleanup work against.

Time is always passed in as an integer ``now_ms``; nothing here reads a clock or does I/O.
An entry with expiry ``e`` is expired at any ``now_ms >= e``.

Use cases in this project:

- **Replica leases** (one-to-one): ``replica_id -> lease``. A heartbeat is a ``put`` that
  replaces the lease and its index entry; ``expire(now_ms)`` returns the replicas whose
  lease ran out (no heartbeat for ``replica_ttl``), which are then removed
  (docs/concepts/leases-and-retention.md).
- **Rows of a collection with a row TTL**: one-to-one per row (``row_key -> row``, a
  rewrite renews the row) or one-to-many per collection or replica
  (``replica_id -> rows``, each row expiring on its own), where the index holds one entry
  per key however many rows it has.

Example:
    >>> leases = OneToOneTtl[str, int]()
    >>> leases.put("replica-1", 1, now_ms=100, ttl_ms=500)
    >>> leases.put("replica-1", 2, now_ms=200, ttl_ms=500)  # heartbeat renews
    >>> leases.index_entries()
    [(700, 'replica-1')]
    >>> leases.expire(now_ms=700)
    [('replica-1', 2)]
"""

from __future__ import annotations

from collection_manager.core.expiry_indexes.append_only import AppendOnlyTtlIndex
from collection_manager.core.expiry_indexes.base import CleanupStats, KeyedTtlState, expiry_for
from collection_manager.core.expiry_indexes.expiry_index import ExpiryIndex
from collection_manager.core.expiry_indexes.one_to_many import OneToManyTtl
from collection_manager.core.expiry_indexes.one_to_one import OneToOneTtl

__all__ = [
    "AppendOnlyTtlIndex",
    "CleanupStats",
    "ExpiryIndex",
    "KeyedTtlState",
    "OneToManyTtl",
    "OneToOneTtl",
    "expiry_for",
]
