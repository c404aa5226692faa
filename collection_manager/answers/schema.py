"""JSON Schema (as OpenAPI 3.1 holds it) made from the models' types.

``str``, ``int``, ``float`` and ``bool`` are the JSON types; ``X | None`` adds ``null``,
another union is each of its types;
``Literal[...]`` is an enum; ``tuple[X, ...]`` an array; ``Mapping[str, X]`` an object of
X values (``Any``: of anything); a model is a ``$ref`` to its own schema, which is made
too. Every field is required: a model says null, never leaves a field out. A model's
docstring is its schema's description; a field's :class:`~.fields.Doc` its own.
"""

from __future__ import annotations

import inspect
import typing
from typing import Any

from collection_manager.answers.fields import (
    UnsupportedType,
    fields_of,
    is_mapping,
    is_model,
    members_of,
    optional_of,
)

REF_PREFIX = "#/components/schemas/"
_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean", type(None): "null"}


def schemas(*models: type) -> dict[str, Any]:
    """The schema of each of ``models`` and of every model they hold, by class name."""
    found: dict[str, Any] = {}
    for model in models:
        _model_schema(model, found)
    return found


def ref(model: type) -> dict[str, str]:
    """A reference to ``model``'s schema among the components."""
    return {"$ref": REF_PREFIX + model.__name__}


def _model_schema(model: type, found: dict[str, Any]) -> None:
    if model.__name__ in found:
        return
    found[model.__name__] = {}  # taken, for a model that holds itself
    properties = {}
    for name, kind, doc in fields_of(model):
        schema = _schema(kind, found)
        if doc.description:
            schema["description"] = doc.description
        if doc.minimum is not None:
            schema["minimum"] = doc.minimum
        if doc.maximum is not None:
            schema["maximum"] = doc.maximum
        if doc.pattern is not None:
            schema["pattern"] = doc.pattern
        properties[name] = schema
    found[model.__name__] = {
        "type": "object",
        "description": " ".join(inspect.cleandoc(model.__doc__ or "").split("\n\n")[0].split()),
        "required": list(properties),
        "properties": properties,
    }


def _schema(kind: Any, found: dict[str, Any]) -> dict[str, Any]:
    if kind is Any:
        return {}
    if kind in _SCALARS:
        return {"type": _SCALARS[kind]}
    inner = optional_of(kind)
    if inner is not None:
        return _nullable(_schema(inner, found))
    origin, arguments = typing.get_origin(kind), typing.get_args(kind)
    if origin is typing.Literal:
        return {"enum": list(arguments)}
    if origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis:
        return {"type": "array", "items": _schema(arguments[0], found)}
    members = members_of(kind)
    if members:
        return _union([_schema(member, found) for member in members])
    if is_mapping(kind):
        values = arguments[1] if arguments else Any
        return {"type": "object", "additionalProperties": _schema(values, found) or True}
    if is_model(kind):
        _model_schema(kind, found)
        return ref(kind)
    raise UnsupportedType(f"no JSON Schema for {kind!r}")


def _union(schemas: list[dict[str, Any]]) -> dict[str, Any]:
    """One JSON type of several when they are all plain types, else ``oneOf``."""
    if all(set(schema) == {"type"} and isinstance(schema["type"], str) for schema in schemas):
        return {"type": [schema["type"] for schema in schemas]}
    return {"oneOf": schemas}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    if isinstance(schema.get("type"), str):
        return {**schema, "type": [schema["type"], "null"]}
    if "enum" in schema:
        return {"enum": [*schema["enum"], None]}
    return {"oneOf": [schema, {"type": "null"}]}
