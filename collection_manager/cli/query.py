"""``collections query``: a collection's rows (and their multiplicity) at the time readers
see, read from Redis in bounded steps (docs/concepts/reads.md), then rendered with pure
functions (``query_json`` for ``--format json``, ``query_table`` for people).

A bucketed collection is read at one consistent cut of its buckets (``core/cut.py``),
printed as its ``as_of``: the buckets' times joined by commas (``12,40,7``).
"""

from __future__ import annotations

import argparse
from typing import Any

from collection_manager import devservices
from collection_manager.cli.argtypes import seconds_argument
from collection_manager.cli.output import (
    TableView,
    add_format_option,
    collection_spec,
    header,
    moment,
    plural,
    show,
)
from collection_manager.cli.stores import store_from_env
from collection_manager.cli.tail import EXAMPLE_BUCKETED
from collection_manager.cli.where import HELP as WHERE_HELP
from collection_manager.cli.where import parse_where, split_term
from collection_manager.config import InfraConfig, from_env
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import Cut
from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.filters import Filter, describe
from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.reading.rows import query_json, sorted_rows
from collection_manager.storage.client import (
    READ_TIMEOUT_S,
    any_node_answers,
    patiently,
)
from collection_manager.storage.reads import Snapshot, StoreReader
from collection_manager.storage.writes import wall_clock_ms

EXAMPLE_SNAPSHOT = Snapshot({("r1", "u1", 0, 41): 1, ("r1", "u1", 1, None): 1}, 42)
# The examples of a collection of four buckets: its as_of is a cut, a time per bucket.
EXAMPLE_CUT_SNAPSHOT = Snapshot(EXAMPLE_SNAPSHOT.rows, 12 + 40 + 7 + 9, Cut((12, 40, 7, 9)))


def positive_int(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def add_query(actions: Any, spec: CollectionSpec, bucketed: CollectionSpec, help_: str) -> None:
    """Adds ``collections query`` to the ``collections`` group's ``actions``."""
    query = actions.add_parser("query", help="a collection's rows at its latest time")
    query.add_argument("collection", help=help_)
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
    add_format_option(
        query,
        {
            "collections query compute_frontiers": query_json(spec, EXAMPLE_SNAPSHOT),
            f"collections query {EXAMPLE_BUCKETED}": query_json(bucketed, EXAMPLE_CUT_SNAPSHOT),
        },
    )
    query.set_defaults(run=run_query)


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
        expiries = read_expiries(store.reader, spec, list(snapshot.rows)) if args.expiry else None
        return spec, where, snapshot, expiries

    spec, where, snapshot, expiries = patiently(read, args.timeout, answers=_redis_answers)
    table = query_table(spec, snapshot, where, expiries, args.limit)
    show(args.format, query_json(spec, snapshot, expiries), table, headers=not args.no_headers)
    return 0


def read_expiries(store: StoreReader, spec: CollectionSpec, rows: list[Row]) -> dict[Row, int]:
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
