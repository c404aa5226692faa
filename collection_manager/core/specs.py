"""Collections as the core sees them: a name, typed columns and indexed columns.

A row is a plain ``tuple`` of values in column order. On the wire (and in the row schemas'
Avro form) each value is one branch of the *Value* union ``[null, boolean, long, double,
string]``, so the core only knows these five kinds; Avro ``int`` and ``float`` columns are
accepted in row schemas and treated as ``long`` and ``double``.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

from collection_manager.core.buckets import (
    DEFAULT_BUCKET_COLUMN,
    MAX_BUCKETS,
    SEPARATOR,
    unit_name,
)
from collection_manager.core.errors import SchemaError
from collection_manager.core.names import check_collection_name
from collection_manager.core.numbers import INT_LIMIT, in_domain, outside
from collection_manager.core.partitions import Partitioning

Value = None | bool | int | float | str
Row = tuple[Value, ...]

# Avro primitive -> the Value kind that carries it.
_KINDS = {
    "boolean": "boolean",
    "int": "long",
    "long": "long",
    "float": "double",
    "double": "double",
    "string": "string",
}
INDEXABLE_TYPES = frozenset({"string", "long"})
# The exact Python types of a kind's values, for the fast path of validate_row.
_EXACT_TYPES: dict[str, tuple[type, ...]] = {
    "boolean": (bool,),
    "long": (int,),
    "double": (int, float),
    "string": (str,),
}
# The range of Avro's long: what the wire can carry (the domain is narrower).
LONG_MIN, LONG_MAX = -(2**63), 2**63 - 1


@dataclasses.dataclass(frozen=True)
class Column:
    """One column: its name, value kind (boolean/long/double/string) and nullability."""

    name: str
    type: str
    nullable: bool = False


def _column_of(field: Mapping[str, Any], collection: str) -> Column:
    kind = field.get("type")
    nullable = isinstance(kind, list) and "null" in kind
    if isinstance(kind, list):
        rest = [k for k in kind if k != "null"]
        kind = rest[0] if len(rest) == 1 else None
    if not isinstance(kind, str) or kind not in _KINDS:
        raise SchemaError(
            f"column {field.get('name')!r} of {collection} has type {field.get('type')!r}; "
            f"columns must be one of {sorted(_KINDS)}, optionally in a union with null",
            collection=collection,
        )
    return Column(str(field["name"]), _KINDS[kind], nullable)


def columns_of(row_schema: Mapping[str, Any]) -> tuple[Column, ...]:
    """The columns of an Avro record schema (a dict as loaded from an ``.avsc`` file).

    Raises:
        SchemaError: when it is not a record of primitive (or nullable primitive) fields,
            or two fields share a name.
    """
    name = str(row_schema.get("name", "?"))
    if row_schema.get("type") != "record" or not isinstance(row_schema.get("fields"), list):
        raise SchemaError(f"row schema of {name} must be an Avro record", collection=name)
    columns = tuple(_column_of(field, name) for field in row_schema["fields"])
    names = [c.name for c in columns]
    if len(set(names)) != len(names):
        raise SchemaError(f"row schema of {name} repeats a column name", collection=name)
    return columns


@dataclasses.dataclass(frozen=True)
class CollectionSpec:
    """A collection's definition.

    Attributes:
        name: the collection id (also the Kafka message key of its requests).
        row_schema: the Avro record schema of its rows.
        indexed_columns: columns with a secondary index (string or long columns).
        buckets: how many buckets the collection is spread over (``core/buckets.py``), 1 to
            ``MAX_BUCKETS``.
        bucket_column: the column whose value picks a row's bucket (a string or long
            column; ``replica_id`` unless named).
        bucket: set on the spec of one bucket's storage unit (``unit``), whose ``name`` is
            then the unit's name, ``<collection>#<bucket>``.
        partitioning: the Kafka partition of each bucket, assigned when the collection was
            created (``core/partitions.py``); None: each request's key picks its partition
            (an unbucketed collection, or a bucketed one created before assignments).
        columns: derived from ``row_schema``.

    Raises:
        InvalidNameError: for a name outside the name rule (``core/names.py``).
        SchemaError: for a bad row schema or an indexed column that is missing or of a
            type that cannot be indexed.
    """

    name: str
    row_schema: Mapping[str, Any] = dataclasses.field(hash=False, repr=False)
    indexed_columns: tuple[str, ...] = ()
    buckets: int = 1
    bucket_column: str = DEFAULT_BUCKET_COLUMN
    bucket: int | None = None
    partitioning: Partitioning | None = None
    columns: tuple[Column, ...] = dataclasses.field(init=False)

    def __post_init__(self) -> None:
        # The name becomes part of every Redis key of the collection (storage/keys.py).
        check_collection_name(self.collection)
        if self.name != unit_name(self.collection, self.bucket):  # a '#' of its own
            check_collection_name(self.name)
        object.__setattr__(self, "indexed_columns", tuple(self.indexed_columns))
        object.__setattr__(self, "columns", columns_of(self.row_schema))
        kinds = {c.name: c.type for c in self.columns}
        self._check_buckets(kinds)
        for column in self.indexed_columns:
            if kinds.get(column) not in INDEXABLE_TYPES:
                raise SchemaError(
                    f"indexed column {column!r} of {self.name} must be a string or long "
                    f"column, not {kinds.get(column, 'missing')}",
                    collection=self.name,
                )

    def _check_buckets(self, kinds: Mapping[str, str]) -> None:
        if isinstance(self.buckets, bool) or not 1 <= self.buckets <= MAX_BUCKETS:
            raise SchemaError(
                f"{self.collection} asks for {self.buckets} buckets; a collection has 1 to "
                f"{MAX_BUCKETS} (MAX_BUCKETS)",
                collection=self.collection,
            )
        assigned = None if self.partitioning is None else len(self.partitioning.assigned)
        if assigned is not None and (self.buckets == 1 or assigned != self.buckets):
            raise SchemaError(
                f"{self.collection} has {self.buckets} buckets but a partition assignment of "
                f"{assigned}: only a bucketed collection has one, a partition per bucket",
                collection=self.collection,
            )
        if self.buckets == 1:
            return
        column = next((c for c in self.columns if c.name == self.bucket_column), None)
        if column is None or column.type not in INDEXABLE_TYPES or column.nullable:
            found = "missing" if column is None else f"{column.type}, nullable={column.nullable}"
            raise SchemaError(
                f"bucket column {self.bucket_column!r} of {self.collection} must be a "
                f"non-nullable string or long column, not {found}",
                collection=self.collection,
            )

    @property
    def collection(self) -> str:
        """The collection's name (``name`` is a bucket's unit name on a bucket's spec)."""
        return self.name.partition(SEPARATOR)[0]

    @property
    def bucket_position(self) -> int:
        """The position of the bucket column in a row."""
        return self.column_names.index(self.bucket_column)

    def units(self) -> list[CollectionSpec]:
        """The spec of each storage unit: itself when unbucketed, else one per bucket."""
        if self.buckets == 1:
            return [self]
        return [self.unit(bucket) for bucket in range(self.buckets)]

    def unit(self, bucket: int | None) -> CollectionSpec:
        """The spec of ``bucket``'s storage unit (None: the unbucketed collection itself)."""
        if bucket is None and self.buckets == 1:
            return self
        if bucket is None or not 0 <= bucket < self.buckets:
            raise SchemaError(
                f"{self.collection} has buckets 0 to {self.buckets - 1}, not {bucket}",
                collection=self.collection,
            )
        name = unit_name(self.collection, bucket)
        return dataclasses.replace(self, name=name, bucket=bucket)

    def partition_of(self, bucket: int | None) -> int | None:
        """The partition of ``bucket``'s requests, or None when their key picks it."""
        if self.partitioning is None or bucket is None:
            return None
        return self.partitioning.partition(bucket)

    @functools.cached_property
    def exact_types(self) -> tuple[frozenset[type], ...]:
        """Per column, the exact types of values that fit it (None's when nullable)."""
        return tuple(
            frozenset(_EXACT_TYPES[c.type] + ((type(None),) if c.nullable else ()))
            for c in self.columns
        )

    @property
    def column_names(self) -> tuple[str, ...]:
        """Column names in row order."""
        return tuple(c.name for c in self.columns)


def _wrong(value: Value) -> str:
    return f"got {type(value).__name__} {value!r}"


def _type_problem(value: Value, column: Column) -> str | None:
    """Why ``value`` cannot be in ``column``, or None when it can."""
    kind = column.type
    if value is None:
        return None if column.nullable else "null in a non-nullable column"
    # bool is a subclass of int in Python, but a boolean is never a number here.
    if isinstance(value, bool) or kind == "boolean":
        return None if isinstance(value, bool) and kind == "boolean" else _wrong(value)
    if isinstance(value, int):
        if kind not in ("long", "double"):
            return _wrong(value)
        # Ints travel as Avro longs, also in double columns; the domain is narrower.
        return None if in_domain(value) else outside(value, "value")
    if isinstance(value, float):
        if kind != "double":
            return _wrong(value)
        # NaN is not equal to itself, so a NaN row could never be retracted again.
        return None if math.isfinite(value) else f"{value} is not a finite number"
    return None if isinstance(value, str) and kind == "string" else _wrong(value)


def value_problem(value: Value, column: Column) -> str | None:
    """Why ``value`` does not fit ``column`` (a sentence naming the expected type), or None."""
    problem = _type_problem(value, column)
    if problem is None:
        return None
    nullable = " (nullable)" if column.nullable else ""
    return f"column {column.name!r} expects {column.type}{nullable}: {problem}"


def validate_row(row: Sequence[Value], spec: CollectionSpec) -> None:
    """Checks that ``row`` fits ``spec``'s columns.

    Ints are accepted in double columns; booleans are never numbers; NaN and infinities
    are refused, as are integers outside the numeric domain (:mod:`core.numbers`).

    Raises:
        SchemaError: naming the column and the expected type, or the arity mismatch.
    """
    if isinstance(row, str | bytes) or len(row) != len(spec.columns):
        arity = "a string" if isinstance(row, str | bytes) else f"{len(row)} values"
        raise SchemaError(
            f"row of {spec.name} has {arity}, expected {len(spec.columns)} "
            f"({', '.join(spec.column_names)})",
            collection=spec.name,
        )
    # The common case costs a set lookup per value; only a misfit walks the full rules.
    for value, types in zip(row, spec.exact_types, strict=True):
        kind = type(value)
        if (
            kind not in types
            or (kind is int and not -INT_LIMIT <= value <= INT_LIMIT)  # type: ignore[operator]
            or (kind is float and not math.isfinite(value))  # type: ignore[arg-type]
        ):
            break
    else:
        return
    for value, column in zip(row, spec.columns, strict=True):
        problem = value_problem(value, column)
        if problem is not None:
            raise SchemaError(f"row {tuple(row)!r} of {spec.name}: {problem}", collection=spec.name)
