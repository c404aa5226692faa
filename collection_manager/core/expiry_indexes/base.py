"""What every keyed TTL state offers, and the small pieces they share."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, TypeVar

from collection_manager.core.errors import CollectionManagerError

K = TypeVar("K")
V = TypeVar("V")


@dataclass(frozen=True)
class CleanupStats:
    """The work one ``expire`` call did, so callers can check it tracks what expired.

    Attributes:
        index_entries_examined: secondary-index entries read, including the one unexpired
            entry peeked at to decide to stop.
        keys_walked: primary keys whose elements were read (one-to-many only; one-to-one
            reads a key's single value and counts it here too).
        elements_examined: elements read while walking those keys.
        expired: elements (or values) removed and returned.
    """

    index_entries_examined: int = 0
    keys_walked: int = 0
    elements_examined: int = 0
    expired: int = 0


def expiry_for(now_ms: int, ttl_ms: int) -> int:
    """Return the expiry of something written at ``now_ms`` with a time to live of ``ttl_ms``.

    Args:
        now_ms: the write time, in milliseconds.
        ttl_ms: the time to live, in milliseconds; must be positive.

    Returns:
        ``now_ms + ttl_ms``.

    Raises:
        CollectionManagerError: when ``ttl_ms`` is not positive, since such a write would be
            expired before anyone could read it.
    """
    if ttl_ms <= 0:
        raise CollectionManagerError(f"ttl_ms must be positive, got {ttl_ms}")
    return now_ms + ttl_ms


class KeyedTtlState(Protocol[K, V]):
    """A key to value map with one expiry per key, cleaned up through an expiry index.

    Implemented by the tight :class:`~collection_manager.core.expiry_indexes.OneToOneTtl` and the
    append-only baseline :class:`~collection_manager.core.expiry_indexes.AppendOnlyTtlIndex`, so a
    benchmark can drive both with the same operations.
    """

    def put(self, key: K, value: V, now_ms: int, ttl_ms: int) -> None:
        """Set ``key`` to ``value``, expiring at ``now_ms + ttl_ms``."""
        ...

    def get(self, key: K, now_ms: int) -> V | None:
        """Return the value of ``key``, or None when absent or expired at ``now_ms``."""
        ...

    def remove(self, key: K) -> bool:
        """Remove ``key``; return whether it was present."""
        ...

    def expire(self, now_ms: int) -> list[tuple[K, V]]:
        """Remove and return every ``(key, value)`` whose expiry is ``<= now_ms``."""
        ...

    @property
    def index_size(self) -> int:
        """Entries in the secondary (expiry) index."""
        ...

    @property
    def primary_size(self) -> int:
        """Keys in the primary index."""
        ...

    @property
    def last_cleanup(self) -> CleanupStats:
        """The work done by the most recent ``expire`` call."""
        ...
