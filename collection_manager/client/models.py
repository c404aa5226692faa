"""What the catalog and fleet endpoints answer: the models the server writes them from
(``collection_manager/answers``), decoded field by field.

A document missing a field, or holding one of another type, is a :class:`BrokenAnswer`
naming the field, so a program never meets a ``KeyError`` of the client's own.
"""

from __future__ import annotations

from typing import Any, TypeVar

from collection_manager.answers import ShapeError, decode
from collection_manager.answers.models import (
    BucketRows,
    Collection,
    CollectionDetail,
    CollectionList,
    Column,
    Replica,
    ReplicaList,
    Ttl,
)
from collection_manager.answers.status import Status
from collection_manager.client.errors import BrokenAnswer

__all__ = [
    "BucketRows",
    "Collection",
    "CollectionDetail",
    "CollectionList",
    "Column",
    "Replica",
    "ReplicaList",
    "Status",
    "Ttl",
    "parse",
]

T = TypeVar("T")


def parse(url: str, model: type[T], document: Any) -> T:
    """``document`` as a ``model``; what it misses or mistypes as :class:`BrokenAnswer`."""
    try:
        return decode(model, document)
    except ShapeError as exc:
        raise BrokenAnswer(url, f"a document without what the API sends ({exc})") from None
