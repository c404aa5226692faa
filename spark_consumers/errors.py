"""Errors of the Spark job."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ConsumerError(CollectionManagerError):
    """The consumer's streaming query stopped with an error."""
