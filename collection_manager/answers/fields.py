"""How a model's field types are read: ``Annotated`` documentation, optional types, the
containers a model may use. Shared by the schema maker and the decoder so that both
accept the same types and say the same of one they do not."""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any


@dataclasses.dataclass(frozen=True)
class Doc:
    """What a field's type alone does not say: its description and bounds, in the schema
    and checked by :func:`~collection_manager.answers.decode`."""

    description: str = ""
    minimum: int | None = None
    maximum: int | None = None
    pattern: str | None = None  # of a string (JSON Schema applies it to strings alone)


Field = tuple[str, Any, Doc]
_FIELDS: dict[type, tuple[Field, ...]] = {}  # by model: its type hints are read once


def fields_of(model: type) -> tuple[Field, ...]:
    """Each field of ``model``: its name, its type without ``Annotated``, and its Doc."""
    if model not in _FIELDS:
        _FIELDS[model] = _read_fields(model)
    return _FIELDS[model]


def _read_fields(model: type) -> tuple[Field, ...]:
    hints = typing.get_type_hints(model, include_extras=True)
    found = []
    for field in dataclasses.fields(model):
        kind, doc = hints[field.name], Doc()
        if typing.get_origin(kind) is typing.Annotated:
            kind, *extras = typing.get_args(kind)
            doc = next((e for e in extras if isinstance(e, Doc)), doc)
        found.append((field.name, kind, doc))
    return tuple(found)


def optional_of(kind: Any) -> Any | None:
    """``X`` of ``X | None``; None when ``kind`` is no optional type."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        others = [k for k in typing.get_args(kind) if k is not type(None)]
        if len(others) == 1 and len(typing.get_args(kind)) == 2:
            return others[0]
    return None


def members_of(kind: Any) -> tuple[Any, ...]:
    """The types of a union (``int | str``); () when ``kind`` is no union."""
    if typing.get_origin(kind) in (typing.Union, types.UnionType):
        return typing.get_args(kind)
    return ()


def is_mapping(kind: Any) -> bool:
    return typing.get_origin(kind) in (dict, Mapping) or kind in (dict, Mapping)


def is_model(kind: Any) -> bool:
    return isinstance(kind, type) and dataclasses.is_dataclass(kind)


class UnsupportedType(TypeError):
    """A model's field of a type neither the schema nor the decoder knows: a bug here."""
