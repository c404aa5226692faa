"""A tight expiry index: at most one entry per key, ordered by expiry."""

from __future__ import annotations

import bisect
import itertools
from collections.abc import Iterator
from typing import Generic, TypeVar

K = TypeVar("K")

# An entry as stored: (-expires_at, -sequence, key). Negating both keeps the list in
# *descending* expiry order, so the earliest expiry sits at the end of the list, where
# ``list.pop()`` is O(1): cleanup then costs what expires, not the size of the index.
# The unique sequence number breaks ties between equal expiries (earliest write first), so
# keys are never compared and need not be orderable.
_Entry = tuple[int, int, K]


class ExpiryIndex(Generic[K]):
    """Keys ordered by expiry, with at most one entry per key.

    Setting a key's expiry replaces its previous entry and discarding a key deletes it, so
    the index is never larger than the set of keys it was told about. Insertions and
    removals are O(log n) comparisons plus a list shift; popping the earliest entry is O(1).
    """

    def __init__(self) -> None:
        self._entries: list[_Entry[K]] = []
        self._by_key: dict[K, _Entry[K]] = {}
        self._sequence = itertools.count()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._by_key

    def expiry_of(self, key: K) -> int | None:
        """Return the indexed expiry of ``key``, or None when it is not indexed."""
        entry = self._by_key.get(key)
        return None if entry is None else -entry[0]

    def set(self, key: K, expires_at: int) -> None:
        """Index ``key`` at ``expires_at``, replacing any entry it already had."""
        self.discard(key)
        entry: _Entry[K] = (-expires_at, -next(self._sequence), key)
        bisect.insort(self._entries, entry, key=_sort_key)
        self._by_key[key] = entry

    def discard(self, key: K) -> bool:
        """Delete the entry of ``key``; return whether it had one."""
        entry = self._by_key.pop(key, None)
        if entry is None:
            return False
        position = bisect.bisect_left(self._entries, _sort_key(entry), key=_sort_key)
        del self._entries[position]
        return True

    def peek(self) -> tuple[int, K] | None:
        """Return the earliest ``(expires_at, key)`` without removing it, or None if empty."""
        if not self._entries:
            return None
        negated_expiry, _, key = self._entries[-1]
        return -negated_expiry, key

    def pop(self) -> tuple[int, K]:
        """Remove and return the earliest ``(expires_at, key)``.

        Raises:
            IndexError: when the index is empty.
        """
        negated_expiry, _, key = self._entries.pop()
        del self._by_key[key]
        return -negated_expiry, key

    def __iter__(self) -> Iterator[tuple[int, K]]:
        """Yield ``(expires_at, key)`` from the earliest expiry to the latest."""
        for negated_expiry, _, key in reversed(self._entries):
            yield -negated_expiry, key


def _sort_key(entry: _Entry[K]) -> tuple[int, int]:
    # Sequence numbers are unique, so this pair orders entries totally without the key.
    return entry[0], entry[1]
