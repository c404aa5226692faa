"""Errors of the wire format: bytes that are not a request, or a request that cannot be written."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class SerializationError(CollectionManagerError):
    """Bytes that do not decode as a request, or a request that cannot be encoded."""


class UnknownSchemaError(SerializationError):
    """A message written with a schema whose fingerprint no registry entry has."""


class OversizedRequestError(CollectionManagerError):
    """A request larger than the configured limit."""
