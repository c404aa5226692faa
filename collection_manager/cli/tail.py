"""``collections tail``: a collection's change log, the newest changes by default.

As Unix ``tail``: the newest ``-n`` changes (default 10), oldest to newest; ``--since``
the changes from a time on (of a bucketed collection, after a cut), at most ``-n``, to go
on from where the last read stopped, or those applied in the last duration (``5m``: the
log records Redis's clock at each time, ``storage/log_clock.py``); ``-f`` goes on printing
new changes as they come. Every Redis call is bounded: the log is read through its reader
(``storage/change_log.py``) a few entries a call, the newest backwards from its end
(``ChangeLog.newest``), never the whole log.

A bucketed collection has a time per bucket and no order across them: its newest ``-n``
changes are the newest by the clocks the logs record, printed with their bucket and the
cut the read went through (``as_of``), which ``--since`` takes back to go on after it; with
``--since``, the first ``-n`` in bucket order (``at_most``).
"""

from __future__ import annotations

import argparse
import json
import re
import signal
import time
from collections.abc import Sequence
from types import FrameType
from typing import Any

from collection_manager.cli.deprecated import add_deprecated_option
from collection_manager.cli.output import (
    add_format_option,
    collection_spec,
    show,
    tsv_line,
)
from collection_manager.cli.stores import store_from_env
from collection_manager.cli.tail_views import (
    cut_tail_cells,
    cut_tail_columns,
    cut_tail_json,
    cut_tail_table,
    newest_table,
    tail_columns,
    tail_json,
    tail_table,
)
from collection_manager.config.errors import UsageError
from collection_manager.core.cut import Cut, CutError
from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.reads import CutChanges
from collection_manager.storage.store import LogEntry, RedisStore

FOLLOW_POLL_S = 0.5
DEFAULT_COUNT = 10
EXAMPLE_BUCKETED = "frontiers_by_replica"
EXAMPLE_LOG = [
    LogEntry(41, ("r1", "u1", 0, 40), -1),
    LogEntry(41, ("r1", "u1", 0, 41), 1),
]
EXAMPLE_CUT_LOG = CutChanges([(1, entry) for entry in EXAMPLE_LOG], Cut((12, 41, 7, 9)))

# A duration's units, in ms.
DURATION_UNITS = {"s": 1_000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
DURATION_SHAPE = "a duration: a whole number and a unit, s, m, h or d (30s, 5m, 2h, 1d)"
SINCE_SHAPE = (
    "a time (0 or more), or for a bucketed collection a cut as its as_of prints it: a time "
    f"per bucket joined by commas, such as 12,40,7; or {DURATION_SHAPE}"
)
# What looks like a duration, with a unit we may not take (1.5h, 10ms, 1w).
_DURATION = re.compile(r"(\d+(?:\.\d*)?)\s*([a-zA-Z]+)")


def count_argument(text: str) -> int:
    """An argparse type: a count of changes, 0 or more."""
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, not {value}")
    return value


def duration_ms(text: str) -> int | None:
    """The ms of a duration (``30s``, ``5m``, ``2h``, ``1d``); None when ``text`` is not
    shaped as one (a time, a cut).

    Raises:
        argparse.ArgumentTypeError: when it is shaped as one, in a unit not taken.
    """
    shaped = _DURATION.fullmatch(text.strip())
    if shaped is None:
        return None
    count, unit = shaped.groups()
    if not count.isdigit() or unit not in DURATION_UNITS:
        raise argparse.ArgumentTypeError(f"give {DURATION_SHAPE}, not {text!r}")
    return int(count) * DURATION_UNITS[unit]


def since_argument(text: str) -> str:
    """An argparse type: a time (0 or later), times joined by commas (a cut), or a duration;
    whether a time or a cut fits depends on the collection (:func:`parse_since`, once it is
    known)."""
    if duration_ms(text) is not None:
        return text
    for piece in text.split(","):
        try:
            value = int(piece)
        except ValueError:
            raise argparse.ArgumentTypeError(f"give {SINCE_SHAPE}, not {text!r}") from None
        if value < 0:
            raise argparse.ArgumentTypeError(f"times start at 0, not {value}")
    return text


def parse_since(text: str | None, spec: CollectionSpec) -> int | Cut | None:
    """``--since`` of ``spec``: a time for an unbucketed collection; for a bucketed one a
    cut (``0`` alone: its start), whose changes after it are wanted. None: not given.

    Raises:
        UsageError: when it does not have the shape the collection's reads take.
    """
    if text is None:
        return None
    if spec.buckets == 1:
        if "," in text:
            raise UsageError(
                f"argument --since: {spec.name} has one bucket: give a time (0 or more), "
                f"not the cut {text!r}"
            )
        return int(text)
    if text.strip() == "0":
        return Cut((0,) * spec.buckets)
    try:
        return Cut.parse(text, spec.buckets)
    except CutError as exc:
        raise UsageError(f"argument --since: {exc}") from None


def add_tail(actions: Any, spec: CollectionSpec, bucketed: CollectionSpec, help_: str) -> None:
    """Adds ``collections tail`` to the ``collections`` group's ``actions``."""
    tail = actions.add_parser(
        "tail",
        help="a collection's newest changes (time, row, diff), or those since a time",
    )
    tail.add_argument("collection", help=help_)
    tail.add_argument(
        "-n",
        dest="count",
        type=count_argument,
        default=DEFAULT_COUNT,
        metavar="N",
        help=f"at most this many changes in all (default {DEFAULT_COUNT}): the newest, or "
        "with --since the first at or after it; of a bucketed collection, the newest by "
        "Redis's clock, or with --since the first in bucket order (going on from the as_of "
        "printed reads a time cut short again whole); with -f, what is printed before "
        "following (0: only new ones)",
    )
    tail.add_argument(
        "--since",
        type=since_argument,
        metavar="T",
        help="the changes at this time or later, oldest first (default: the newest -n); of "
        "a bucketed collection, a cut as as_of prints it (12,40,7): the changes after it; "
        "or a duration, a whole number of s, m, h or d (30s, 5m, 2h, 1d): the changes "
        "applied in the last one, by Redis's clock; with -f, every change from there on",
    )
    tail.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="then print new changes as they come, one per line (JSON lines with --format "
        f"json), asking Redis every {FOLLOW_POLL_S:g} s, until Ctrl-C or SIGTERM (exit 0)",
    )
    add_deprecated_option(tail, "collections tail --limit", "count", type=count_argument)
    add_format_option(
        tail,
        {
            "collections tail compute_frontiers --since 41": tail_json(spec, EXAMPLE_LOG),
            f"collections tail {EXAMPLE_BUCKETED} --since 12,40,7,9": cut_tail_json(
                bucketed, EXAMPLE_CUT_LOG
            ),
        },
    )
    tail.set_defaults(run=run_tail)


def at_least(changes: CutChanges, since: Cut) -> CutChanges:
    """``changes`` reaching ``since`` at least in every bucket: where a bucket's readable
    time is still behind the cut asked for (a query's cut during a delete in progress, a
    cut typed ahead), going on from the cut returned reads nothing of it twice."""
    times = zip(changes.cut.times, since.times, strict=True)
    return CutChanges(changes.changes, Cut(tuple(max(pair) for pair in times)))


def at_most(changes: CutChanges, count: int) -> CutChanges:
    """The first ``count`` of ``changes`` (bucket order, each bucket's oldest first) and
    the cut to go on after them: a bucket keeps the cut read through, or stops just before
    its first change left out. A time cut short is then read again whole by the next read:
    a cut holds whole times only."""
    if len(changes.changes) <= count:
        return changes
    reached = list(changes.cut.times)
    for bucket, change in reversed(changes.changes[count:]):
        reached[bucket] = change.time - 1
    return CutChanges(changes.changes[:count], Cut(tuple(reached)))


def _store() -> RedisStore:
    return store_from_env()


def run_tail(args: argparse.Namespace) -> int:
    """Prints the newest changes, or those since ``--since``, oldest first; with ``-f``
    goes on with the new ones."""
    check_collection_name(args.collection)
    store = _store()
    spec = collection_spec(store, args.collection)
    within = None if args.since is None else duration_ms(args.since)
    if within is not None:  # where the last duration begins: then as --since that time/cut
        given: int | Cut | None = store.reader.since_clock(spec.name, within)
    else:
        given = parse_since(args.since, spec)
    headers = not args.no_headers
    if spec.buckets > 1:  # changes between consistent cuts, each with its bucket
        assert not isinstance(given, int)
        return _tail_cut(store, spec, given, args, headers)
    assert not isinstance(given, Cut)
    if args.follow:
        if given is None:
            entries, latest = store.reader.newest(spec.name, args.count)
            return follow(store, spec, latest + 1, args.format, headers, entries)
        return follow(store, spec, given, args.format, headers)
    if given is None:
        entries, latest = store.reader.newest(spec.name, args.count)
        table = newest_table(spec, entries, latest)
    else:
        entries = store.reader.tail(spec.name, given, args.count) if args.count else []
        _, latest = store.size(spec.name)
        table = tail_table(spec, entries, given, max(args.count, 1), latest)
    show(args.format, tail_json(spec, entries), table, headers=headers)
    return 0


def _tail_cut(
    store: RedisStore,
    spec: CollectionSpec,
    given: Cut | None,
    args: argparse.Namespace,
    headers: bool,
) -> int:
    if given is None:
        changes = store.reader.newest_buckets(spec.name, args.count)
    elif args.follow:
        return follow_cut(store, spec, given, args.format, headers)
    elif args.count:
        found = store.tail_buckets(spec.name, given, args.count)
        changes = at_least(at_most(found, args.count), given)
    else:
        changes = CutChanges([], given)
    if args.follow:
        return follow_cut(store, spec, changes.cut, args.format, headers, changes)
    table = cut_tail_table(spec, changes, given, max(args.count, 1))
    show(args.format, cut_tail_json(spec, changes), table, headers=headers)
    return 0


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
