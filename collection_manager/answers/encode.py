"""A model as the JSON value the API and ``--format json`` write."""

from __future__ import annotations

import dataclasses
from typing import Any


def to_json(model: Any) -> dict[str, Any]:
    """``model``'s fields by name, nested models as objects, tuples as lists."""
    return _value(model)


def _value(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_value(item) for item in value]
    if isinstance(value, dict):
        return {key: _value(item) for key, item in value.items()}
    return value
