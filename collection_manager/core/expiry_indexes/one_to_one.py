"""One expiry per key (value state, map entries, replica leases), with a tight index."""

from __future__ import annotations

from typing import Generic, TypeVar

from collection_manager.core.expiry_indexes.base import CleanupStats, expiry_for
from collection_manager.core.expiry_indexes.expiry_index import ExpiryIndex

K = TypeVar("K")
V = TypeVar("V")


class OneToOneTtl(Generic[K, V]):
    """A key to value map where each key expires on its own, one index entry per key.

    A ``put`` replaces both the value and the key's index entry, and ``remove`` deletes
    both, so ``index_size == primary_size`` always holds: cleanup never reads an entry that
    a later write made stale.
    Satisfies :class:`~collection_manager.core.expiry_indexes.KeyedTtlState`.
    """

    def __init__(self) -> None:
        self._values: dict[K, tuple[V, int]] = {}
        self._index: ExpiryIndex[K] = ExpiryIndex()
        self._last_cleanup = CleanupStats()

    def put(self, key: K, value: V, now_ms: int, ttl_ms: int) -> None:
        """Set ``key`` to ``value``, expiring at ``now_ms + ttl_ms``.

        Args:
            key: the key, e.g. a replica id.
            value: the value, e.g. a lease.
            now_ms: the write time in milliseconds.
            ttl_ms: the time to live in milliseconds; must be positive.

        Raises:
            CollectionManagerError: when ``ttl_ms`` is not positive.
        """
        expires_at = expiry_for(now_ms, ttl_ms)
        self._values[key] = (value, expires_at)
        self._index.set(key, expires_at)

    def get(self, key: K, now_ms: int) -> V | None:
        """Return the value of ``key``, or None when absent or expired at ``now_ms``.

        An expired value is hidden even before ``expire`` has removed it.
        """
        stored = self._values.get(key)
        if stored is None or stored[1] <= now_ms:
            return None
        return stored[0]

    def expires_at(self, key: K) -> int | None:
        """Return the expiry of ``key``, or None when absent (expired or not)."""
        stored = self._values.get(key)
        return None if stored is None else stored[1]

    def remove(self, key: K) -> bool:
        """Remove ``key`` and its index entry; return whether it was present."""
        self._index.discard(key)
        return self._values.pop(key, None) is not None

    def expire(self, now_ms: int) -> list[tuple[K, V]]:
        """Remove and return every ``(key, value)`` whose expiry is ``<= now_ms``.

        Reads the index from its earliest entry and stops at the first unexpired one, so
        the work is the number expired plus one peek.

        Returns:
            The expired pairs, earliest expiry first.
        """
        expired: list[tuple[K, V]] = []
        examined = 0
        while (front := self._index.peek()) is not None:
            examined += 1
            if front[0] > now_ms:
                break
            _, key = self._index.pop()
            value, _ = self._values.pop(key)
            expired.append((key, value))
        self._last_cleanup = CleanupStats(
            index_entries_examined=examined,
            keys_walked=len(expired),
            elements_examined=len(expired),
            expired=len(expired),
        )
        return expired

    def earliest_expiry(self) -> int | None:
        """Return the earliest expiry held (expired or not), or None when empty: one peek."""
        front = self._index.peek()
        return None if front is None else front[0]

    def index_entries(self) -> list[tuple[int, K]]:
        """Return the secondary index as ``(expires_at, key)``, earliest first."""
        return list(self._index)

    @property
    def index_size(self) -> int:
        """Entries in the secondary (expiry) index; always equal to ``primary_size``."""
        return len(self._index)

    @property
    def primary_size(self) -> int:
        """Keys held, including expired ones not yet removed by ``expire``."""
        return len(self._values)

    @property
    def entries_examined(self) -> int:
        """Index entries read by the most recent ``expire`` (expired ones plus one peek)."""
        return self._last_cleanup.index_entries_examined

    @property
    def last_cleanup(self) -> CleanupStats:
        """The work done by the most recent ``expire`` call."""
        return self._last_cleanup
