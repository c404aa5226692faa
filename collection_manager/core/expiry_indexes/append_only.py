"""BASELINE ONLY: the append-only expiry index that benchmarks compare the tight one against.

This is the strategy SPARK-50302 replaced, kept so a benchmark can show index size and
cleanup work over time, ours
(:class:`~collection_manager.core.expiry_indexes.OneToOneTtl`) versus this.
Do not use it for real state.
"""

from __future__ import annotations

import heapq
import itertools
from typing import Generic, TypeVar

from collection_manager.core.expiry_indexes.base import CleanupStats, expiry_for

K = TypeVar("K")
V = TypeVar("V")


class AppendOnlyTtlIndex(Generic[K, V]):
    """Baseline one-to-one TTL state whose index gains an entry on every write.

    A ``put`` writes the primary and *adds* ``(expires_at, key)`` to the index without
    deleting the key's previous entry; ``remove`` leaves the index alone. Cleanup pops every
    expired index entry and checks it against the primary, so stale entries cost a read
    each and the index grows with writes, not with keys. It is still correct: a key is
    evicted only when its *current* expiry has passed. Satisfies
    :class:`~collection_manager.core.expiry_indexes.KeyedTtlState`.
    """

    def __init__(self) -> None:
        self._values: dict[K, tuple[V, int]] = {}
        # (expires_at, sequence, key): the unique sequence keeps keys from being compared.
        self._index: list[tuple[int, int, K]] = []
        self._sequence = itertools.count()
        self._last_cleanup = CleanupStats()

    def put(self, key: K, value: V, now_ms: int, ttl_ms: int) -> None:
        """Set ``key`` to ``value`` and append an index entry at ``now_ms + ttl_ms``."""
        expires_at = expiry_for(now_ms, ttl_ms)
        self._values[key] = (value, expires_at)
        heapq.heappush(self._index, (expires_at, next(self._sequence), key))

    def get(self, key: K, now_ms: int) -> V | None:
        """Return the value of ``key``, or None when absent or expired at ``now_ms``."""
        stored = self._values.get(key)
        if stored is None or stored[1] <= now_ms:
            return None
        return stored[0]

    def remove(self, key: K) -> bool:
        """Remove ``key`` from the primary only; its index entries linger until cleanup."""
        return self._values.pop(key, None) is not None

    def expire(self, now_ms: int) -> list[tuple[K, V]]:
        """Pop every index entry ``<= now_ms``, evicting keys whose current expiry passed."""
        expired: list[tuple[K, V]] = []
        examined = 0
        while self._index:
            examined += 1
            if self._index[0][0] > now_ms:
                break
            _, _, key = heapq.heappop(self._index)
            stored = self._values.get(key)
            # Stale entry: the key was removed, or renewed to a later expiry.
            if stored is not None and stored[1] <= now_ms:
                del self._values[key]
                expired.append((key, stored[0]))
        self._last_cleanup = CleanupStats(
            index_entries_examined=examined,
            keys_walked=len(expired),
            elements_examined=len(expired),
            expired=len(expired),
        )
        return expired

    @property
    def index_size(self) -> int:
        """Entries in the index: one per write not yet cleaned up."""
        return len(self._index)

    @property
    def primary_size(self) -> int:
        """Keys in the primary index."""
        return len(self._values)

    @property
    def entries_examined(self) -> int:
        """Index entries read by the most recent ``expire``, stale ones included."""
        return self._last_cleanup.index_entries_examined

    @property
    def last_cleanup(self) -> CleanupStats:
        """The work done by the most recent ``expire`` call."""
        return self._last_cleanup
