"""How ``collections tail`` shows changes: as JSON objects or as a table, for an unbucketed
collection (time, row, diff) and a bucketed one (bucket, time, row, diff, and the cut the
read went through). Pure: values in, values out; ``cli/tail.py`` and ``cli/tail_follow.py``
read and print.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collection_manager.cli.output import TableView, header, plural
from collection_manager.core.cut import Cut
from collection_manager.core.specs import CollectionSpec
from collection_manager.reading.rows import as_object
from collection_manager.storage.reads import CutChanges
from collection_manager.storage.store import LogEntry


def tail_json(spec: CollectionSpec, entries: Sequence[LogEntry]) -> list[dict[str, Any]]:
    """``[{"time", "row": {column: value}, "diff"}]``, oldest first."""
    return [{"time": e.time, "row": as_object(spec, e.row), "diff": e.diff} for e in entries]


def tail_table(
    spec: CollectionSpec, entries: Sequence[LogEntry], since: int, limit: int, latest: int
) -> TableView:
    """The changes at times >= ``since``, or a line saying there are none."""
    title = f"{spec.name}: {plural(len(entries), 'change')} at times >= {since}"
    if len(entries) >= limit:
        title += f" (the first {limit}; raise -n or --since for more)"
    return TableView(
        title=title,
        columns=tail_columns(spec),
        rows=[(e.time, *e.row, e.diff) for e in entries],
        empty=f"{spec.name}: no changes at times >= {since} (its latest time is {latest})",
        null="null",
    )


def newest_table(spec: CollectionSpec, entries: Sequence[LogEntry], latest: int) -> TableView:
    """The newest changes, or a line saying the log holds none."""
    return TableView(
        title=f"{spec.name}: the newest {plural(len(entries), 'change')}, through time {latest}",
        columns=tail_columns(spec),
        rows=[(e.time, *e.row, e.diff) for e in entries],
        empty=f"{spec.name}: no changes in its log (its latest time is {latest})",
        null="null",
    )


def tail_columns(spec: CollectionSpec) -> list[str]:
    """The header of an unbucketed collection's changes: time, columns, diff."""
    names = spec.column_names
    return [header("time", names), *names, header("diff", names)]


def cut_tail_json(spec: CollectionSpec, changes: CutChanges) -> list[dict[str, Any]]:
    """A bucketed collection's changes: ``[{"bucket", "time", "row", "diff", "as_of"}]``,
    each bucket's oldest first; ``time`` is the bucket's own, and ``as_of`` the cut the read
    went through (``--since`` it goes on after it)."""
    reached = changes.cut.text()
    return [
        {
            "bucket": bucket,
            "time": e.time,
            "row": as_object(spec, e.row),
            "diff": e.diff,
            "as_of": reached,
        }
        for bucket, e in changes.changes
    ]


def cut_tail_columns(spec: CollectionSpec) -> list[str]:
    """The header of a bucketed collection's changes: bucket, time, columns, diff, as_of."""
    names = spec.column_names
    return [
        header("bucket", names),
        header("time", names),
        *names,
        header("diff", names),
        header("as_of", names),
    ]


def cut_tail_cells(changes: CutChanges) -> list[tuple[Any, ...]]:
    """The cells of each change: its bucket, time, row, diff, and the cut read through."""
    reached = changes.cut.text()
    return [(bucket, e.time, *e.row, e.diff, reached) for bucket, e in changes.changes]


def cut_tail_table(
    spec: CollectionSpec, changes: CutChanges, since: Cut | None, limit: int
) -> TableView:
    """A bucketed collection's changes after the cut ``since`` (None: the newest changes in
    all), or a line saying none."""
    through = changes.cut.text()
    count = plural(len(changes.changes), "change")
    if since is None:
        return TableView(
            title=f"{spec.name}: the newest {count}, through cut {through}",
            columns=cut_tail_columns(spec),
            rows=cut_tail_cells(changes),
            empty=f"{spec.name}: no changes in its logs (its cut now is {through})",
            null="null",
        )
    after = f"after cut {since.text()}"
    title = f"{spec.name}: {count} {after}, through cut {through}"
    if len(changes.changes) >= limit and changes.cut == since:  # one time holds more
        title += f" (the first {limit} of a time; raise -n for more)"
    elif len(changes.changes) >= limit:
        title += f" (-n {limit} reached; go on with --since {through})"
    return TableView(
        title=title,
        columns=cut_tail_columns(spec),
        rows=cut_tail_cells(changes),
        empty=f"{spec.name}: no changes {after} (its cut now is {through})",
        null="null",
    )
