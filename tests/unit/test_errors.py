"""The exception tree and its context."""

from __future__ import annotations

import pytest

from collection_manager.core.errors import (
    CollectionManagerError,
    FilterError,
    InfrastructureError,
    SchemaError,
    UnknownCollectionError,
)
from schemas.errors import OversizedRequestError, SerializationError, UnknownSchemaError


@pytest.mark.parametrize(
    "kind",
    [
        InfrastructureError,
        SerializationError,
        UnknownSchemaError,
        SchemaError,
        FilterError,
        UnknownCollectionError,
        OversizedRequestError,
    ],
)
def test_every_error_is_a_collection_manager_error(kind: type[Exception]) -> None:
    assert issubclass(kind, CollectionManagerError)


def test_unknown_schema_is_a_serialization_error() -> None:
    assert issubclass(UnknownSchemaError, SerializationError)


def test_context_is_kept_and_shown() -> None:
    error = SerializationError("bad bytes", collection="c")
    assert str(error) == "bad bytes [collection=c]"
    assert error.with_context(topic="t", partition=0, offset=42, collection="other") is error
    assert error.collection == "c"  # context known where it was raised wins
    assert error.context() == {"collection": "c", "topic": "t", "partition": 0, "offset": 42}
    assert str(error) == "bad bytes [collection=c, topic=t, partition=0, offset=42]"
    assert error.message == "bad bytes"


def test_plain_message_without_context() -> None:
    assert str(FilterError("no")) == "no"
    assert FilterError("no").context() == {}
