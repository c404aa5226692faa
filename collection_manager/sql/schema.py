"""A collection's columns as a Spark schema, with the columns a source adds."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from pyspark.sql.types import (
    BooleanType,
    DataType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from collection_manager.core.errors import SchemaError
from collection_manager.core.specs import CollectionSpec

_TYPES: dict[str, DataType] = {
    "boolean": BooleanType(),
    "long": LongType(),
    "double": DoubleType(),
    "string": StringType(),
}


def spark_schema(
    spec: CollectionSpec,
    before: Sequence[str] = (),
    after: Sequence[str] = (),
    text: Collection[str] = (),
) -> StructType:
    """The columns of ``spec`` with non-null columns ``before`` and ``after`` them: longs,
    or strings for those named in ``text``.

    Raises:
        SchemaError: when a column of ``spec`` has the name of one the source adds.
    """
    added = [*before, *after]
    clash = sorted(set(added) & set(spec.column_names))
    if clash:
        raise SchemaError(
            f"{spec.name} has a column named {clash[0]!r}, which the data source adds "
            f"({', '.join(added)}); read it with the CLI's query instead",
            collection=spec.name,
        )
    fields = [StructField(c.name, _TYPES[c.type], c.nullable) for c in spec.columns]

    def added_field(name: str) -> StructField:
        return StructField(name, StringType() if name in text else LongType(), False)

    return StructType(
        [added_field(name) for name in before] + fields + [added_field(name) for name in after]
    )
