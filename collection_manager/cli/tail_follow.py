"""``collections tail -f``: new changes printed as they come, one line each (JSON lines
with ``--format json``, else tab-separated lines under one header line), asking Redis every
``FOLLOW_POLL_S``, until Ctrl-C or SIGTERM (exit 0).
"""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Sequence
from types import FrameType

from collection_manager.cli.output import tsv_line
from collection_manager.cli.tail_since import at_least
from collection_manager.cli.tail_views import (
    cut_tail_cells,
    cut_tail_columns,
    cut_tail_json,
    tail_columns,
    tail_json,
)
from collection_manager.core.cut import Cut
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.reads import CutChanges
from collection_manager.storage.store import LogEntry, RedisStore

FOLLOW_POLL_S = 0.5


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def _change_line(spec: CollectionSpec, entry: LogEntry, fmt: str) -> str:
    if fmt == "json":
        # One line per change (JSON lines), for `jq` and line-reading scripts.
        return json.dumps(tail_json(spec, [entry])[0], default=str)
    return tsv_line([entry.time, *entry.row, entry.diff], "null")


def follow(
    store: RedisStore,
    spec: CollectionSpec,
    since: int,
    fmt: str,
    headers: bool = True,
    first: Sequence[LogEntry] = (),
) -> int:
    """Prints ``first`` (the newest changes), then each change at a time >= ``since`` as a
    line, as it becomes readable, until Ctrl-C; exits 0 then.

    A time becomes readable once every change at it is in the log (a delete in steps
    writes its changes first), so each poll reads whole times, and the next starts after
    the last time printed: nothing is printed twice or skipped. A poll reads only what is
    new since the last one.
    """
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` ends it as Ctrl-C does
    if fmt != "json" and headers:  # a table cannot grow line by line: tab-separated lines
        print(tsv_line(tail_columns(spec)), flush=True)
    if first:
        print("\n".join(_change_line(spec, entry, fmt) for entry in first), flush=True)
    try:
        while True:
            for entry in store.reader.tail(spec.name, since):
                print(_change_line(spec, entry, fmt), flush=True)
                since = entry.time + 1
            time.sleep(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        return 0  # the way to stop following, not a failure


def _cut_lines(spec: CollectionSpec, changes: CutChanges, fmt: str) -> list[str]:
    if fmt == "json":
        return [json.dumps(entry, default=str) for entry in cut_tail_json(spec, changes)]
    return [tsv_line(cells, "null") for cells in cut_tail_cells(changes)]


def follow_cut(
    store: RedisStore,
    spec: CollectionSpec,
    since: Cut,
    fmt: str,
    headers: bool = True,
    first: CutChanges | None = None,
) -> int:
    """``follow`` of a bucketed collection: prints ``first`` (each bucket's newest), then
    each poll the changes between the cut it went on from and the consistent cut now
    (``tail_buckets``), each with its bucket and that cut (``as_of``), and goes on from
    there: a change is printed once, and a group sent to several buckets only once the cut
    holds all of it. ``since`` is the cut to go on after.
    """
    reached = since
    signal.signal(signal.SIGTERM, _interrupt)
    if fmt != "json" and headers:
        print(tsv_line(cut_tail_columns(spec)), flush=True)
    if first is not None and first.changes:
        print("\n".join(_cut_lines(spec, first, fmt)), flush=True)
    try:
        while True:
            changes = at_least(store.tail_buckets(spec.name, reached), reached)
            lines = _cut_lines(spec, changes, fmt)
            if lines:  # one write per poll
                print("\n".join(lines), flush=True)
            reached = changes.cut
            time.sleep(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        return 0
