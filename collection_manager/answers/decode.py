"""A JSON document back into a model, each field checked against its type.

What the client does with every answer: a document that lacks a field, or holds one of
another type, is a :class:`ShapeError` naming the field's path, never a ``KeyError`` or
a model holding a string where an int was meant. Fields a document has beyond the
model's are ignored, so a newer server's answers still decode.
"""

from __future__ import annotations

import re
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from collection_manager.answers.fields import (
    Doc,
    UnsupportedType,
    fields_of,
    is_mapping,
    is_model,
    members_of,
    optional_of,
)

T = TypeVar("T")
_SCALARS: dict[Any, tuple[type, ...]] = {
    str: (str,),
    int: (int,),
    float: (int, float),
    bool: (bool,),
    type(None): (type(None),),
}


class ShapeError(ValueError):
    """A document that is not the model it should be; ``path`` names the field."""

    def __init__(self, path: str, problem: str) -> None:
        super().__init__(f"{path or 'the document'}: {problem}")
        self.path = path


def decode(model: type[T], document: Any, path: str = "") -> T:
    """``document`` as a ``model``.

    Raises:
        ShapeError: when a field is missing or of another type.
    """
    if not isinstance(document, Mapping):
        raise ShapeError(path, f"an object was expected, not {_kind(document)}")
    values = {}
    for name, kind, doc in fields_of(model):
        where = f"{path}.{name}" if path else name
        if name not in document:
            raise ShapeError(where, "missing")
        values[name] = _within(doc, _value(kind, document[name], where), where)
    return model(**values)


def _within(doc: Doc, value: Any, path: str) -> Any:
    """``value``, once it is within the bounds its field's Doc sets."""
    if isinstance(value, int) and not isinstance(value, bool):
        if doc.minimum is not None and value < doc.minimum:
            raise ShapeError(path, f"{value} is below its minimum {doc.minimum}")
        if doc.maximum is not None and value > doc.maximum:
            raise ShapeError(path, f"{value} is above its maximum {doc.maximum}")
    if isinstance(value, str) and doc.pattern is not None and not re.search(doc.pattern, value):
        raise ShapeError(path, f"{value[:80]!r} does not match {doc.pattern}")
    return value


def _value(kind: Any, value: Any, path: str) -> Any:
    if kind is Any:
        return value
    if kind in _SCALARS:
        # bool is an int to Python, never to JSON.
        if isinstance(value, _SCALARS[kind]) and (kind is bool or not isinstance(value, bool)):
            return float(typing.cast(float, value)) if kind is float else value
        raise ShapeError(path, f"{kind.__name__} expected, not {_kind(value)}")
    inner = optional_of(kind)
    if inner is not None:
        return None if value is None else _value(inner, value, path)
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Literal:
        if value not in arguments:
            raise ShapeError(path, f"one of {list(arguments)} expected, not {value!r:.80}")
        return value
    if origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis:
        if not isinstance(value, list):
            raise ShapeError(path, f"an array expected, not {_kind(value)}")
        return tuple(_value(arguments[0], item, f"{path}[{i}]") for i, item in enumerate(value))
    members = members_of(kind)
    if members:
        return _first_of(members, value, path)
    if is_mapping(kind):
        if not isinstance(value, Mapping):
            raise ShapeError(path, f"an object expected, not {_kind(value)}")
        values = arguments[1] if arguments else Any
        return {str(k): _value(values, v, f"{path}.{k}") for k, v in value.items()}
    if is_model(kind):
        return decode(kind, value, path)
    raise UnsupportedType(f"cannot decode {kind!r}")


def _first_of(members: tuple[Any, ...], value: Any, path: str) -> Any:
    """``value`` as the first of a union's types it is."""
    for member in members:
        try:
            return _value(member, value, path)
        except ShapeError:
            continue
    names = " or ".join(getattr(m, "__name__", str(m)) for m in members)
    raise ShapeError(path, f"{names} expected, not {_kind(value)}")


def _kind(value: Any) -> str:
    names = {type(None): "null", bool: "a boolean", str: "a string", list: "an array"}
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return "a number"
    return names.get(type(value), "an object" if isinstance(value, Mapping) else "a value")
