"""Several expiring elements per key (list state, a replica's rows), one index entry per key."""

from __future__ import annotations

from typing import Generic, TypeVar

from collection_manager.core.expiry_indexes.base import CleanupStats, expiry_for
from collection_manager.core.expiry_indexes.expiry_index import ExpiryIndex

K = TypeVar("K")
E = TypeVar("E")


class OneToManyTtl(Generic[K, E]):
    """Keys holding ordered elements that each expire on their own.

    The secondary index holds one entry per non-empty key: the **minimum** expiry of its
    elements. Later expiries need no entry, because cleaning the key at its minimum walks
    all its elements anyway and finds the next minimum, which then replaces the entry. So a
    key is walked once per cleanup, however many of its elements expire (SPARK-50302's list
    case: O(n) instead of O(d * (n - d))).

    ``remove_key`` deletes the index entry together with the elements. Leaving it behind
    would keep an orphan row in the index and, if the key were re-added, cleanup would
    visit it at the *old* expiry; here re-added elements live their full TTL.
    """

    def __init__(self) -> None:
        self._elements: dict[K, list[tuple[E, int]]] = {}
        self._index: ExpiryIndex[K] = ExpiryIndex()
        self._last_cleanup = CleanupStats()

    def append(self, key: K, element: E, now_ms: int, ttl_ms: int) -> None:
        """Append ``element`` to ``key``, expiring at ``now_ms + ttl_ms``.

        The index entry changes only when this element becomes the key's earliest expiry.

        Args:
            key: the key, e.g. a replica id.
            element: the element, e.g. a row.
            now_ms: the write time in milliseconds.
            ttl_ms: the time to live in milliseconds; must be positive.

        Raises:
            CollectionManagerError: when ``ttl_ms`` is not positive.
        """
        expires_at = expiry_for(now_ms, ttl_ms)
        self._elements.setdefault(key, []).append((element, expires_at))
        current_minimum = self._index.expiry_of(key)
        if current_minimum is None or expires_at < current_minimum:
            self._index.set(key, expires_at)

    def elements(self, key: K, now_ms: int) -> list[E]:
        """Return the elements of ``key`` unexpired at ``now_ms``, in append order.

        Expired elements are hidden even before ``expire`` has removed them.
        """
        stored = self._elements.get(key, [])
        return [element for element, expires_at in stored if expires_at > now_ms]

    def remove_key(self, key: K) -> bool:
        """Remove ``key``, all its elements and its index entry; return whether it existed."""
        self._index.discard(key)
        return self._elements.pop(key, None) is not None

    def expire(self, now_ms: int) -> list[tuple[K, E]]:
        """Remove and return every ``(key, element)`` whose expiry is ``<= now_ms``.

        For each key whose indexed minimum has passed, walks its elements once, keeps the
        unexpired ones and re-indexes the key at their minimum (or drops the key when none
        remain). The re-indexed minimum is later than ``now_ms``, so no key is walked twice.

        Returns:
            The expired pairs, grouped by key (keys in order of their minimum expiry),
            elements in append order.
        """
        expired: list[tuple[K, E]] = []
        examined = walked = elements_examined = 0
        while (front := self._index.peek()) is not None:
            examined += 1
            if front[0] > now_ms:
                break
            _, key = self._index.pop()
            walked += 1
            elements_examined += len(self._elements[key])
            expired.extend((key, element) for element in self._clean_key(key, now_ms))
        self._last_cleanup = CleanupStats(
            index_entries_examined=examined,
            keys_walked=walked,
            elements_examined=elements_examined,
            expired=len(expired),
        )
        return expired

    def _clean_key(self, key: K, now_ms: int) -> list[E]:
        """Drop the expired elements of an unindexed ``key``, re-index it, return the dropped."""
        kept: list[tuple[E, int]] = []
        dropped: list[E] = []
        for element, expires_at in self._elements[key]:
            if expires_at > now_ms:
                kept.append((element, expires_at))
            else:
                dropped.append(element)
        if kept:
            self._elements[key] = kept
            self._index.set(key, min(expires_at for _, expires_at in kept))
        else:
            del self._elements[key]
        return dropped

    def index_entries(self) -> list[tuple[int, K]]:
        """Return the secondary index as ``(minimum expires_at, key)``, earliest first."""
        return list(self._index)

    @property
    def index_size(self) -> int:
        """Entries in the secondary index: one per key, so at most ``key_count``."""
        return len(self._index)

    @property
    def key_count(self) -> int:
        """Keys in the primary index (rows of the primary), expired or not."""
        return len(self._elements)

    @property
    def primary_size(self) -> int:
        """Same as ``key_count``: the primary index holds one row per key."""
        return self.key_count

    @property
    def element_count(self) -> int:
        """Elements held across all keys, including expired ones not yet removed."""
        return sum(len(stored) for stored in self._elements.values())

    @property
    def entries_examined(self) -> int:
        """Index entries read by the most recent ``expire`` (walked keys plus one peek)."""
        return self._last_cleanup.index_entries_examined

    @property
    def last_cleanup(self) -> CleanupStats:
        """The work done by the most recent ``expire`` call."""
        return self._last_cleanup
