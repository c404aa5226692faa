"""The exception tree: one root, small subclasses carrying where the problem was."""

from __future__ import annotations

import datetime
from typing import Self

_CONTEXT_FIELDS = ("collection", "topic", "partition", "offset")


def utc(ms: int) -> str:
    """How a message names a moment (ms since the Unix epoch): ``2026-12-01 22:31:05 UTC``."""
    at = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    return f"{at:%Y-%m-%d %H:%M:%S} UTC"


class CollectionManagerError(Exception):
    """Root of every error this project raises.

    Attributes:
        message: what went wrong, without the context.
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

    def with_context(
        self,
        *,
        collection: str | None = None,
        topic: str | None = None,
        partition: int | None = None,
        offset: int | None = None,
    ) -> Self:
        """Fills in context that is known higher up the stack; keeps what is already set.

        Returns:
            This error, so that ``raise exc.with_context(offset=o)`` reads naturally.
        """
        given = (collection, topic, partition, offset)
        for name, value in zip(_CONTEXT_FIELDS, given, strict=True):
            if value is not None and getattr(self, name) is None:
                setattr(self, name, value)
        return self

    def context(self) -> dict[str, str | int]:
        """The context attributes that are set, by name."""
        values = {name: getattr(self, name) for name in _CONTEXT_FIELDS}
        return {name: value for name, value in values.items() if value is not None}

    def __str__(self) -> str:
        context = self.context()
        if not context:
            return self.message
        where = ", ".join(f"{name}={value}" for name, value in context.items())
        return f"{self.message} [{where}]"


class InfrastructureError(CollectionManagerError):
    """A service (Kafka, Redis, Spark, Java, Maven) is missing or did not come up."""


class SchemaError(CollectionManagerError):
    """A row or definition that does not match its schema."""


class FilterError(CollectionManagerError):
    """A deletion or read filter that is malformed or invalid for the collection."""


class UnknownCollectionError(CollectionManagerError):
    """A request or read that names a collection nobody created."""


class InvalidNameError(CollectionManagerError):
    """A collection name or replica id outside the name rule (``core/names.py``)."""


class EpochError(CollectionManagerError):
    """An epoch no controller issued: zero, negative, or above the replica's highest."""


class LogTrimmedError(CollectionManagerError):
    """A change log no longer holds changes after a position a reader has still to read
    (``storage/change_log.py``), or the position is none of the log's any more (the
    collection was dropped and made again).

    Attributes:
        trimmed_through: the latest time of a change trimmed from the log, when known.
        after: the position the reader stood at (a time, or an entry id), when known.
    """

    def __init__(
        self,
        message: str,
        *,
        collection: str | None = None,
        trimmed_through: int | None = None,
        after: str | None = None,
    ) -> None:
        super().__init__(message, collection=collection)
        self.trimmed_through = trimmed_through
        self.after = after
