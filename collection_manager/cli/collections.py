"""Collections: ``query`` (rows at the latest time), ``tail`` (the change log), ``collections``.

Each reading command reads from Redis only, then renders with pure functions (``*_json``
for ``--format json``, ``*_table`` for people).

A bucketed collection (``core/buckets.py``) is read at one consistent cut of its buckets
(``core/cut.py``): ``query`` prints the cut as its ``as_of`` (the buckets' times joined by
commas, ``12,40,7``, where an unbucketed collection's is its time), and ``tail`` prints
each change with its bucket and the cut its read went through, which ``--since`` takes
back to go on after it.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import signal
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType
from typing import Any

from collection_manager import devservices
from collection_manager.cli.buckets import (
    add_bucket_options,
    create_checked,
    keep_buckets,
    layout,
    with_buckets,
)
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.output import (
    CREATE_HINT,
    TableView,
    add_format_option,
    collection_spec,
    header,
    moment,
    plural,
    show,
    tsv_line,
)
from collection_manager.cli.status import (
    CollectionInfo,
    bucket_table,
    buckets_json,
    collection_info,
    collection_infos,
    counter_headers,
    example_bucketed,
)
from collection_manager.cli.where import HELP as WHERE_HELP
from collection_manager.cli.where import parse_where, split_term
from collection_manager.config import InfraConfig, from_env
from collection_manager.config.errors import UsageError
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import Cut, CutError
from collection_manager.core.errors import CollectionManagerError, SchemaError
from collection_manager.core.filters import Filter, describe
from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.reading.rows import as_object, query_json, sorted_rows
from collection_manager.reading.status import columns_json
from collection_manager.storage.client import (
    READ_TIMEOUT_S,
    any_node_answers,
    patiently,
)
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.reads import CutChanges
from collection_manager.storage.store import LogEntry, RedisStore, Snapshot, wall_clock_ms
from schemas.introspection import introspection_spec, introspection_specs

COLLECTION_HELP = "its name (`collection-manager collections list` shows them)"


EXAMPLE_SNAPSHOT = Snapshot({("r1", "u1", 0, 41): 1, ("r1", "u1", 1, None): 1}, 42)
EXAMPLE_LOG = [
    LogEntry(41, ("r1", "u1", 0, 40), -1),
    LogEntry(41, ("r1", "u1", 0, 41), 1),
]
# The examples of a collection of four buckets: its as_of is a cut, a time per bucket.
EXAMPLE_BUCKETED = "frontiers_by_replica"
EXAMPLE_CUT_SNAPSHOT = Snapshot(EXAMPLE_SNAPSHOT.rows, 12 + 40 + 7 + 9, Cut((12, 40, 7, 9)))
EXAMPLE_CUT_LOG = CutChanges([(1, entry) for entry in EXAMPLE_LOG], Cut((12, 41, 7, 9)))


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def seconds_argument(text: str) -> float:
    """An argparse type: seconds, 0 or more."""
    value = float(text)
    if not 0 <= value < float("inf"):  # also refuses nan
        raise argparse.ArgumentTypeError(f"must be 0 or more seconds, not {text}")
    return value


SINCE_SHAPE = (
    "a time (0 or more), or for a bucketed collection a cut as its as_of prints it: a time "
    "per bucket joined by commas, such as 12,40,7"
)


def since_argument(text: str) -> str:
    """An argparse type: a time (0 or later), or times joined by commas (a cut); which one
    fits depends on the collection (:func:`parse_since`, once it is known)."""
    pieces = text.split(",")
    for piece in pieces:
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


def register(commands: Any) -> None:
    """Adds ``query``, ``tail`` and ``collections``."""
    spec = introspection_spec("compute_frontiers")
    query = commands.add_parser("query", help="a collection's rows at its latest time")
    query.add_argument("collection", help=COLLECTION_HELP)
    query.add_argument(
        "--where", action="append", default=[], metavar="COLUMN<op>VALUE", help=WHERE_HELP
    )
    query.add_argument(
        "--expiry", action="store_true", help="show when each row with a TTL expires"
    )
    query.add_argument(
        "--limit",
        type=positive_int,
        help="at most this many rows, the first the read finds (not the smallest); it "
        "stops reading there (default: every row)",
    )
    query.add_argument(
        "--timeout",
        type=seconds_argument,
        default=READ_TIMEOUT_S,
        metavar="SECONDS",
        help="how long the read tries again while Redis fails over (a node still loading "
        "its data, a Redis Cluster whose slot has no primary yet) before it gives up "
        f"(default {READ_TIMEOUT_S:g}; 0: at once); when no node answers at all it fails "
        "at once",
    )
    bucketed = dataclasses.replace(spec, name=EXAMPLE_BUCKETED, buckets=4)
    add_format_option(
        query,
        {
            "query compute_frontiers": query_json(spec, EXAMPLE_SNAPSHOT),
            f"query {EXAMPLE_BUCKETED}": query_json(bucketed, EXAMPLE_CUT_SNAPSHOT),
        },
    )
    query.set_defaults(run=run_query)

    tail = commands.add_parser("tail", help="a collection's changes (time, row, diff)")
    tail.add_argument("collection", help=COLLECTION_HELP)
    tail.add_argument(
        "--since",
        type=since_argument,
        metavar="T",
        help="changes at this time or later (default 0; with --follow, only new ones); of a "
        "bucketed collection, a cut as as_of prints it (12,40,7): the changes after it",
    )
    tail.add_argument(
        "--limit", type=positive_int, default=100, help="at most this many changes (default 100)"
    )
    tail.add_argument(
        "-f",
        "--follow",
        action="store_true",
        help="print new changes as they come, one per line (JSON lines with --format json), "
        f"asking Redis every {FOLLOW_POLL_S:g} s, until Ctrl-C or SIGTERM (exit 0)",
    )
    add_format_option(
        tail,
        {
            "tail compute_frontiers --since 41": tail_json(spec, EXAMPLE_LOG),
            f"tail {EXAMPLE_BUCKETED} --since 12,40,7,9": cut_tail_json(bucketed, EXAMPLE_CUT_LOG),
        },
    )
    tail.set_defaults(run=run_tail)
    _register_admin(commands, spec)


def store_from_env(load_functions: bool = False) -> RedisStore:
    """The store of the configured (or running local) Redis; starts nothing.

    Args:
        load_functions: load this version's store functions first, as the commands that
            create collections do (readers never load them: docs/concepts/upgrades.md).
    """
    endpoints = devservices.running(from_env(InfraConfig), needs=("redis",))
    return RedisStore.connect(endpoints.redis_url, load_functions=load_functions)


def query_table(
    spec: CollectionSpec,
    snapshot: Snapshot,
    where: Filter | None,
    expiries: dict[Row, int] | None = None,
    limit: int | None = None,
) -> TableView:
    """The rows and their multiplicity (and expiry), or a line saying there are none."""
    rows = sorted_rows(snapshot)
    matching = "" if where is None else f" matching {describe(where)}"
    at = f"{spec.name} at time {snapshot.as_of}"
    if snapshot.cut is not None:
        at = f"{spec.name} at cut {snapshot.as_of_text}"
    empty = f"{at}: no rows{matching}"
    if snapshot.as_of == 0:
        empty += " (nothing applied to it yet)"
    columns = [*spec.column_names, header("count", spec.column_names)]
    shown: list[tuple[Any, ...]] = [(*row, m) for row, m in rows]
    if expiries is not None:
        now = wall_clock_ms()
        columns.append(header("expires", spec.column_names))
        shown = [(*row, m, moment(expiries.get(row), now) or "-") for row, m in rows]
    title = f"{at}: {plural(len(rows), 'row')}{matching}"
    if limit is not None and len(rows) >= limit:
        title += f" (--limit {limit}: the first the read found; there may be more)"
    return TableView(
        title=title,
        columns=columns,
        rows=shown,
        empty=empty,
        null="null",
    )


def tail_json(spec: CollectionSpec, entries: Sequence[LogEntry]) -> list[dict[str, Any]]:
    """``[{"time", "row": {column: value}, "diff"}]``, oldest first."""
    return [{"time": e.time, "row": as_object(spec, e.row), "diff": e.diff} for e in entries]


def tail_table(
    spec: CollectionSpec, entries: Sequence[LogEntry], since: int, limit: int, latest: int
) -> TableView:
    """The changes, or a line saying there are none since ``since``."""
    title = f"{spec.name}: {plural(len(entries), 'change')} at times >= {since}"
    if len(entries) >= limit:
        title += f" (the first {limit}; raise --limit or --since for more)"
    names = spec.column_names
    return TableView(
        title=title,
        columns=[header("time", names), *names, header("diff", names)],
        rows=[(e.time, *e.row, e.diff) for e in entries],
        empty=f"{spec.name}: no changes at times >= {since} (its latest time is {latest})",
        null="null",
    )


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


def cut_tail_table(spec: CollectionSpec, changes: CutChanges, since: Cut, limit: int) -> TableView:
    """A bucketed collection's changes after the cut ``since``, or a line saying none."""
    after = f"after cut {since.text()}"
    title = f"{spec.name}: {plural(len(changes.changes), 'change')} {after}"
    title += f", through cut {changes.cut.text()}"
    if len(changes.changes) >= limit:  # whole times of each bucket: may pass the limit
        title += f" (--limit {limit} reached; go on with --since {changes.cut.text()})"
    return TableView(
        title=title,
        columns=cut_tail_columns(spec),
        rows=cut_tail_cells(changes),
        empty=f"{spec.name}: no changes {after} (its cut now is {changes.cut.text()})",
        null="null",
    )


def run_query(args: argparse.Namespace) -> int:
    """Prints the rows (and their multiplicity) at the time readers see, read in bounded
    steps (docs/concepts/reads.md)."""
    check_collection_name(args.collection)  # the name and the terms' syntax: before connecting
    for term in args.where:
        split_term(term)

    def read() -> tuple[CollectionSpec, Filter | None, Snapshot, Any]:
        store = store_from_env()
        spec = collection_spec(store, args.collection)
        where = parse_where(args.where, spec)
        # A bucketed collection's: every bucket (those --where pins) at one consistent cut.
        snapshot = store.stepped_snapshot(spec.name, where, args.limit)
        expiries = read_expiries(store, spec, list(snapshot.rows)) if args.expiry else None
        return spec, where, snapshot, expiries

    spec, where, snapshot, expiries = patiently(read, args.timeout, answers=_redis_answers)
    table = query_table(spec, snapshot, where, expiries, args.limit)
    show(args.format, query_json(spec, snapshot, expiries), table, headers=not args.no_headers)
    return 0


def read_expiries(store: RedisStore, spec: CollectionSpec, rows: list[Row]) -> dict[Row, int]:
    """When each of ``rows`` with a TTL expires: a bucketed collection's, from each row's
    bucket (each bucket keeps its own)."""
    if spec.buckets == 1:
        return store.expiries(spec.name, rows)
    by_bucket: dict[int, list[Row]] = {}
    for row in rows:
        bucket = bucket_of(row[spec.bucket_position], spec.buckets)
        by_bucket.setdefault(bucket, []).append(row)
    found: dict[Row, int] = {}
    for bucket, some in sorted(by_bucket.items()):
        found.update(store.expiries(spec.unit(bucket).name, some))
    return found


def _redis_answers() -> bool:
    """Whether any node of the configured (or local) Redis answers at all."""
    try:
        endpoints = devservices.running(from_env(InfraConfig), needs=("redis",))
    except CollectionManagerError:
        return False
    return any_node_answers(endpoints.redis_url)


def run_tail(args: argparse.Namespace) -> int:
    """Prints the changes at times >= ``--since``, oldest first (or follows them)."""
    check_collection_name(args.collection)
    store = store_from_env()
    spec = collection_spec(store, args.collection)
    given = parse_since(args.since, spec)
    headers = not args.no_headers
    if spec.buckets > 1:  # changes between consistent cuts, each with its bucket
        assert not isinstance(given, int)
        if args.follow:
            return follow_cut(store, spec, given, args.format, headers)
        start = given or Cut((0,) * spec.buckets)
        changes = at_least(store.tail_buckets(spec.name, start, args.limit), start)
        table = cut_tail_table(spec, changes, start, args.limit)
        show(args.format, cut_tail_json(spec, changes), table, headers=headers)
        return 0
    assert not isinstance(given, Cut)
    if args.follow:
        return follow(store, spec, given, args.format, headers=headers)
    since = given or 0
    entries = store.tail(spec.name, since, args.limit)
    _, latest = store.size(spec.name)
    table = tail_table(spec, entries, since, args.limit, latest)
    show(args.format, tail_json(spec, entries), table, headers=headers)
    return 0


FOLLOW_POLL_S = 0.5


def _interrupt(_signum: int, _frame: FrameType | None) -> None:
    raise KeyboardInterrupt


def follow(
    store: RedisStore, spec: CollectionSpec, since: int | None, fmt: str, headers: bool = True
) -> int:
    """Prints each change at a time >= ``since`` (default: after the latest) as a line, as
    it becomes readable, until Ctrl-C; exits 0 then.

    A time becomes readable once every change at it is in the log (a delete in steps
    writes its changes first), so each poll reads whole times, and the next starts after
    the last time printed: nothing is printed twice or skipped. A poll reads only what is
    new since the last one.
    """
    if since is None:
        since = store.size(spec.name)[1] + 1
    signal.signal(signal.SIGTERM, _interrupt)  # `kill` ends it as Ctrl-C does
    names = spec.column_names
    if fmt != "json" and headers:  # a table cannot grow line by line: tab-separated lines
        print(tsv_line([header("time", names), *names, header("diff", names)]), flush=True)
    try:
        while True:
            for entry in store.tail(spec.name, since):
                if fmt == "json":
                    # One line per change (JSON lines), for `jq` and line-reading scripts.
                    print(json.dumps(tail_json(spec, [entry])[0], default=str), flush=True)
                else:
                    print(tsv_line([entry.time, *entry.row, entry.diff], "null"), flush=True)
                since = entry.time + 1
            time.sleep(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        return 0  # the way to stop following, not a failure


def at_least(changes: CutChanges, since: Cut) -> CutChanges:
    """``changes`` reaching ``since`` at least in every bucket: where a bucket's readable
    time is still behind the cut asked for (a query's cut during a delete in progress, a
    cut typed ahead), going on from the cut returned reads nothing of it twice."""
    times = zip(changes.cut.times, since.times, strict=True)
    return CutChanges(changes.changes, Cut(tuple(max(pair) for pair in times)))


def follow_cut(
    store: RedisStore, spec: CollectionSpec, since: Cut | None, fmt: str, headers: bool = True
) -> int:
    """``follow`` of a bucketed collection: each poll prints the changes between the cut it
    went on from and the consistent cut now (``tail_buckets``), each with its bucket and
    that cut (``as_of``), and goes on from there: a change is printed once, and a group
    sent to several buckets only once the cut holds all of it. ``since`` is the cut to go
    on after (default: the cut now, so only new changes).
    """
    # Readable times (tail_buckets' own): a delete still in progress is not skipped.
    reached = since if since is not None else store.cut(spec.name, readable=True)
    signal.signal(signal.SIGTERM, _interrupt)
    if fmt != "json" and headers:
        print(tsv_line(cut_tail_columns(spec)), flush=True)
    try:
        while True:
            changes = at_least(store.tail_buckets(spec.name, reached), reached)
            if fmt == "json":
                lines = [json.dumps(entry, default=str) for entry in cut_tail_json(spec, changes)]
            else:
                lines = [tsv_line(cells, "null") for cells in cut_tail_cells(changes)]
            if lines:  # one write per poll
                print("\n".join(lines), flush=True)
            reached = changes.cut
            time.sleep(FOLLOW_POLL_S)
    except KeyboardInterrupt:
        return 0


def list_json(infos: Sequence[CollectionInfo]) -> list[dict[str, Any]]:
    """``[{"name", "rows", "time", "columns", "indexed_columns"}]`` by name; a bucketed
    collection's rows and time are its buckets' sums, and it also has ``"buckets"``."""
    return [
        {
            "name": i.spec.name,
            "rows": i.rows,
            "time": i.time,
            "columns": list(i.spec.column_names),
            "indexed_columns": list(i.spec.indexed_columns),
            **({"buckets": i.spec.buckets} if i.spec.buckets > 1 else {}),
        }
        for i in infos
    ]


def list_table(infos: Sequence[CollectionInfo]) -> TableView:
    """One line per collection, or how to create the first ones."""
    return TableView(
        title=plural(len(infos), "collection"),
        columns=["name", "rows", "time", "columns", "indexed"],
        rows=[
            (
                i.spec.name,
                i.rows,
                i.time,
                ", ".join(i.spec.column_names),
                ", ".join(i.spec.indexed_columns),
            )
            for i in infos
        ],
        empty=f"no collections yet; {CREATE_HINT}",
    )


def describe_json(info: CollectionInfo) -> dict[str, Any]:
    """``{"name", "rows", "time", "columns": [{...}], "counters", "ttl", "row_schema"}``;
    a bucketed collection's also has ``"buckets", "bucket_column", "bucket_rows"`` (each
    bucket's rows and time; its rows, time and counters are their sums)."""
    spec = info.spec
    return {
        "name": spec.name,
        "rows": info.rows,
        "time": info.time,
        "columns": columns_json(spec),
        "counters": info.counters,
        "ttl": {"rows": info.ttl_rows, "next_expiry": info.next_expiry},
        "row_schema": spec.row_schema,
        **buckets_json(info),
    }


def describe_tables(info: CollectionInfo) -> tuple[TableView, ...]:
    """The columns, the counters of what was applied, and a bucketed collection's rows
    per bucket."""
    spec = info.spec
    ttl = ""
    if info.next_expiry is not None:
        ttl = f"; {plural(info.ttl_rows, 'row')} with a TTL, the next expiring "
        ttl += str(moment(info.next_expiry, wall_clock_ms()))
    # A bucketed collection has a time per bucket: its table below shows them.
    at = f" in {layout(spec)}" if spec.buckets > 1 else f" at time {info.time}"
    columns = TableView(
        title=f"{spec.name}: {plural(info.rows, 'row')}{at}{ttl}",
        columns=["column", "type", "nullable", "indexed"],
        rows=[(c.name, c.type, c.nullable, c.name in spec.indexed_columns) for c in spec.columns],
        empty=f"{spec.name} has no columns",
    )
    counters = TableView(
        title=f"{spec.name}: applied so far",
        columns=counter_headers(),
        rows=[tuple(info.counters[c] for c in SHOWN_COUNTERS)],
        empty="",
    )
    if spec.buckets == 1:
        return columns, counters
    buckets = dataclasses.replace(bucket_table([info]), title=f"{spec.name}: rows per bucket")
    return columns, counters, buckets


def _register_admin(commands: Any, spec: CollectionSpec) -> None:
    admin = commands.add_parser("collections", help="list, describe, create or drop collections")
    actions = admin.add_subparsers(dest="action", required=True)
    example = CollectionInfo(spec, 2, 42, dict.fromkeys(SHOWN_COUNTERS, 0) | {"requests": 3})
    listing = actions.add_parser("list", help="every collection: rows, time, columns")
    add_format_option(listing, {"collections list": list_json([example])})
    listing.set_defaults(run=run_list)
    describe = actions.add_parser(
        "describe", help="one collection: columns, indexes, row TTLs, counters"
    )
    describe.add_argument("name", help=COLLECTION_HELP)
    bucketed = example_bucketed(example.counters)
    add_format_option(
        describe,
        {
            "collections describe compute_frontiers": describe_json(example),
            f"collections describe {bucketed.spec.name}": describe_json(bucketed),
        },
    )
    describe.set_defaults(run=run_describe)
    create = actions.add_parser("create", help="a collection of your own, from an Avro schema")
    create.add_argument("name", help="its name (letters, digits, '_', '-', '.'; at most 100)")
    create.add_argument(
        "--schema", type=Path, required=True, help="the Avro record schema of its rows (.avsc)"
    )
    create.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="COLUMN",
        help="a string or long column to index (repeatable; default: none)",
    )
    add_bucket_options(create)
    create.set_defaults(run=run_create)
    builtin = actions.add_parser(
        "create-introspection", help="the built-in introspection collections (idempotent)"
    )
    add_bucket_options(builtin, column=False)  # they all have replica_id, the default
    builtin.set_defaults(run=run_create_introspection)
    drop = actions.add_parser(
        "drop", help="delete a collection: its rows, change log, indexes and definition"
    )
    drop.add_argument("name", help=COLLECTION_HELP)
    add_confirmation(drop)
    drop.set_defaults(run=run_drop)


def _spec_from_file(name: str, schema: Path, indexed: list[str]) -> CollectionSpec:
    try:
        row_schema = json.loads(schema.read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot read the row schema {schema}: {exc}") from exc
    return CollectionSpec(name, row_schema, tuple(indexed))


def run_list(args: argparse.Namespace) -> int:
    """Lists every collection."""
    infos = collection_infos(store_from_env())
    show(args.format, list_json(infos), list_table(infos), headers=not args.no_headers)
    return 0


def run_describe(args: argparse.Namespace) -> int:
    """Describes one collection."""
    check_collection_name(args.name)
    store = store_from_env()
    info = collection_info(store, collection_spec(store, args.name).name)
    show(args.format, describe_json(info), *describe_tables(info), headers=not args.no_headers)
    return 0


def run_create(args: argparse.Namespace) -> int:
    """Creates a collection from a row schema file (refused when it exists with other
    buckets: ``cli/buckets.py``)."""
    spec = _spec_from_file(args.name, args.schema, args.index)  # checked before connecting
    spec = with_buckets(spec, args.buckets, args.bucket_column)
    create_checked(store_from_env(load_functions=True), [spec])
    print(f"created {args.name}" + (f" in {layout(spec)}" if spec.buckets > 1 else ""))
    return 0


def run_create_introspection(args: argparse.Namespace) -> int:
    """Creates the built-in introspection collections: with ``--buckets``, each in that
    many (refused for one that exists with others); without, each keeps its own."""
    store = store_from_env(load_functions=True)
    specs = [
        keep_buckets(store, spec)
        if args.buckets is None
        else with_buckets(spec, args.buckets, spec.bucket_column)
        for spec in introspection_specs()
    ]
    create_checked(store, specs)
    spread = {spec.name: f" ({layout(spec)})" if spec.buckets > 1 else "" for spec in specs}
    print("created: " + ", ".join(spec.name + spread[spec.name] for spec in specs))
    return 0


def run_drop(args: argparse.Namespace) -> int:
    """Drops one collection, once confirmed."""
    check_collection_name(args.name)
    store = store_from_env()
    name = collection_spec(store, args.name).name
    rows, time = store.size(name)
    what = (
        f"drop {name}: {plural(rows, 'row')} at time {time}, its change log and indexes; "
        "requests that name it after this are dead letters"
    )
    if (code := stop_before(args, what)) is not None:
        return code
    store.drop_collection(name)
    print(f"dropped {name}")
    return 0
