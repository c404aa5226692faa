"""What ``collections query`` answers, as data: a snapshot's rows as ``{"collection",
"as_of", "rows"}``.

``collections query --format json`` prints it, and the HTTP API's ``/rows`` answers it as
JSON, so the two are the same document for the same read.
"""

from __future__ import annotations

from typing import Any

from collection_manager.core.specs import CollectionSpec, Row, Value
from collection_manager.storage.reads import Snapshot


def _sort_key(row: Row) -> tuple[tuple[int, Value], ...]:
    # Nulls first; a column holds one type besides null, so the values compare.
    return tuple((0, 0) if value is None else (1, value) for value in row)


def as_object(spec: CollectionSpec, row: Row) -> dict[str, Value]:
    """A row as ``{column: value}`` in column order."""
    return dict(zip(spec.column_names, row, strict=True))


def sorted_rows(snapshot: Snapshot) -> list[tuple[Row, int]]:
    """The snapshot's rows with their multiplicity, ordered by value."""
    return sorted(snapshot.rows.items(), key=lambda item: _sort_key(item[0]))


def as_of_value(snapshot: Snapshot) -> int | str:
    """What answers print as ``as_of``: the time, or a bucketed collection's cut as text
    (``12,40,7``: bucket 0's time first)."""
    return snapshot.as_of if snapshot.cut is None else snapshot.as_of_text


def query_json(
    spec: CollectionSpec, snapshot: Snapshot, expiries: dict[Row, int] | None = None
) -> dict[str, Any]:
    """``{"collection", "as_of", "rows": [{"row": {column: value}, "count": n}]}``: the
    shape of ``answers.rows.Rows``, written straight for speed (a unit test holds it there).

    The row sits in its own object so that no column (``error_counts`` has ``count``)
    clashes with the multiplicity. With ``expiries`` (``--expiry``), each row also has
    ``expires_at`` (ms since the Unix epoch, or null: no TTL). ``as_of`` is the time read
    at, a number; of a bucketed collection, the cut read at, a string (``"12,40,7"``).
    """
    rows = []
    for row, m in sorted_rows(snapshot):
        entry: dict[str, Any] = {"row": as_object(spec, row), "count": m}
        if expiries is not None:
            entry["expires_at"] = expiries.get(row)
        rows.append(entry)
    return {"collection": spec.name, "as_of": as_of_value(snapshot), "rows": rows}
