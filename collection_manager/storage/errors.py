"""Errors of the Redis storage area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class StorageError(CollectionManagerError):
    """The store refused or failed a write (nothing of the refused operation was written)."""
