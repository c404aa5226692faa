"""What the store needs to know of a collection's row schema."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from collection_manager.errors import SchemaError

_INDEXABLE = ("string", "long", "int")


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: its name, Avro primitive type, and whether it may be null."""

    name: str
    type: str
    nullable: bool = False


@dataclasses.dataclass(frozen=True)
class Layout:
    """A collection's name, columns and indexed columns.

    Raises:
        SchemaError: for an indexed column that does not exist or is not string/long.
    """

    name: str
    columns: tuple[Column, ...]
    indexed_columns: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        types = {c.name: c.type for c in self.columns}
        for name in self.indexed_columns:
            if name not in types:
                raise SchemaError(
                    f"indexed column {name!r} is not a column of {self.name}", collection=self.name
                )
            if types[name] not in _INDEXABLE:
                raise SchemaError(
                    f"indexed column {name!r} of {self.name} is {types[name]}; "
                    f"only {', '.join(_INDEXABLE)} columns can be indexed",
                    collection=self.name,
                )

    @property
    def column_names(self) -> list[str]:
        """Column names in row order."""
        return [c.name for c in self.columns]

    @property
    def indexed_positions(self) -> list[tuple[str, int]]:
        """``(name, position)`` of each indexed column."""
        names = self.column_names
        return [(name, names.index(name)) for name in self.indexed_columns]

    @property
    def double_positions(self) -> frozenset[int]:
        """Positions of float/double columns (whose ints are stored as floats)."""
        return frozenset(i for i, c in enumerate(self.columns) if c.type in ("double", "float"))

    def to_json(self) -> dict[str, Any]:
        """The catalog's record of this layout."""
        return dataclasses.asdict(self)

    @classmethod
    def from_json(cls, raw: dict[str, Any]) -> Layout:
        """The layout of a catalog record."""
        columns = tuple(Column(**c) for c in raw["columns"])
        return cls(raw["name"], columns, tuple(raw["indexed_columns"]))


def layout_of(name: str, fields: Sequence[dict[str, Any]], indexed: Sequence[str]) -> Layout:
    """The layout of an Avro record's ``fields`` (primitive or ``["null", primitive]``)."""
    columns = []
    for field in fields:
        kind = field["type"]
        nullable = isinstance(kind, list) and "null" in kind
        if isinstance(kind, list):
            kind = next(k for k in kind if k != "null")
        columns.append(Column(field["name"], str(kind), nullable))
    return Layout(name, tuple(columns), tuple(indexed))
