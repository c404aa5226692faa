"""Errors of the Redis storage area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class StorageError(CollectionManagerError):
    """The store refused or failed a write (nothing of the refused operation was written)."""


STRADDLES = "request group straddles the applied offset"
"""How ``cm_apply`` (functions.lua) refuses a chunk whose merged requests another applier
partly applied meanwhile."""


class WatermarkMovedError(StorageError):
    """Another applier of the same partition (a second consumer) applied some of the
    requests since they were planned; nothing of the refused chunk was written."""


class LayoutError(StorageError):
    """Redis holds a store layout this version cannot serve (``layout.py``)."""


class FunctionsNotLoadedError(StorageError):
    """Redis holds no library of this version's store functions, and this process may not
    load one (only ``consumer run`` and ``functions load`` do: ``library.py``)."""
