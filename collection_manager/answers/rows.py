"""The answer of a read: ``/api/v1/collections/{name}/rows`` as JSON and ``collections query
--format json``, written by ``reading/rows.py`` (``query_json``).

A read of many rows is the hot path, so ``query_json`` writes the objects straight, not
through these classes; they define the shape, its schema is made from them, and a unit
test holds what ``query_json`` writes to that schema.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated

from collection_manager.answers.fields import Doc

Value = str | int | float | bool | None


@dataclasses.dataclass(frozen=True)
class RowCount:
    """A row and its multiplicity; the row in its own object, so that no column (one may
    be named count) clashes with the multiplicity."""

    row: Annotated[Mapping[str, Value], Doc("The row's value of each column.")]
    count: Annotated[int, Doc("The row's multiplicity (negative after invalid retractions).")]


@dataclasses.dataclass(frozen=True)
class Rows:
    """A collection's rows at one consistent time."""

    collection: str
    as_of: Annotated[
        int | str,
        Doc(
            "The time read at; of a bucketed collection, its cut: a time per bucket joined "
            "by commas, bucket 0 first (12,40,7).",
            minimum=0,
            pattern="^[0-9]+(,[0-9]+)*$",
        ),
    ]
    rows: tuple[RowCount, ...]
