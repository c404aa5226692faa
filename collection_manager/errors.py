"""The exception tree: one root, small subclasses carrying where the problem was."""

from __future__ import annotations


class CollectionManagerError(Exception):
    """Root of every error this project raises.

    Attributes:
        collection: the collection concerned, when known.
        topic: the Kafka topic the input came from, when known.
        partition: its Kafka partition, when known.
        offset: its Kafka offset, when known.
    """

    def __init__(
        self,
        message: str,
        *,
        collection: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.collection = collection
        self.topic = topic
        self.partition = partition
        self.offset = offset


class InfrastructureError(CollectionManagerError):
    """A service (Kafka, Redis, Spark, Java, Maven) is missing or did not come up."""


class SerializationError(CollectionManagerError):
    """Bytes that do not decode as a request."""


class UnknownSchemaError(SerializationError):
    """A message written with a schema whose fingerprint no registry entry has."""


class SchemaError(CollectionManagerError):
    """A row or definition that does not match its schema."""


class FilterError(CollectionManagerError):
    """A deletion or read filter that is malformed or invalid for the collection."""


class UnknownCollectionError(CollectionManagerError):
    """A request or read that names a collection nobody created."""


class OversizedRequestError(CollectionManagerError):
    """A request larger than the configured limit."""


class StorageError(CollectionManagerError):
    """The store refused or failed a write (nothing of the refused operation was written)."""
