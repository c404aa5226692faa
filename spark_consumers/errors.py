"""Errors of the Spark job."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ConsumerError(CollectionManagerError):
    """The consumer's streaming query stopped with an error."""


class ProgressMismatchError(CollectionManagerError):
    """Redis's progress and watermarks were written for another Kafka cluster.

    Not a fault to wait out: ``consumer run`` stops and says how to reset on purpose.
    """
