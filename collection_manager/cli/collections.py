"""``collections list|show|create|create-introspection|drop|query|tail``.

``query`` prints the rows at the latest time (``cli/query.py``), ``tail`` the change log
(``cli/tail.py``). Each reading command reads from Redis only, then renders with pure
functions (``*_json`` for ``--format json``, ``*_table`` for people).

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
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from collection_manager import devservices
from collection_manager.answers import to_json
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
    moment,
    plural,
    show,
)
from collection_manager.cli.partitions import RequestTopic, placement
from collection_manager.cli.query import add_query
from collection_manager.cli.status import (
    CollectionInfo,
    collection_info,
    collection_infos,
    example_bucketed,
)
from collection_manager.cli.status_views import bucket_table, counter_headers
from collection_manager.cli.stores import store_from_env
from collection_manager.cli.tail import EXAMPLE_BUCKETED, add_tail
from collection_manager.config import ConsumerConfig, InfraConfig, from_env
from collection_manager.core.errors import SchemaError
from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec
from collection_manager.reading.catalog import collection_list, detail_of
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.writes import wall_clock_ms
from schemas.introspection import introspection_spec, introspection_specs

COLLECTION_HELP = "its name (`collection-manager collections list` shows them)"


def register(commands: Any) -> None:
    """Adds ``collections`` and its verbs: list, show, create, create-introspection, drop,
    query and tail."""
    spec = introspection_spec("compute_frontiers")
    bucketed = dataclasses.replace(spec, name=EXAMPLE_BUCKETED, buckets=4)
    admin = commands.add_parser(
        "collections", help="list, show, create, drop, query or tail collections"
    )
    actions = admin.add_subparsers(dest="action", required=True)
    _register_admin(actions, spec)
    add_query(actions, spec, bucketed, COLLECTION_HELP)
    add_tail(actions, spec, bucketed, COLLECTION_HELP)


def list_json(infos: Sequence[CollectionInfo]) -> list[dict[str, Any]]:
    """Each collection as the API's listing holds it (answers.models.Collection)."""
    return [to_json(collection) for collection in collection_list(infos).collections]


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
    """The collection as the API's ``/api/v1/collections/{name}`` holds it
    (answers.models.CollectionDetail)."""
    return to_json(detail_of(info))


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
    title = f"{spec.name}: rows per bucket, {placement(spec)}"
    buckets = dataclasses.replace(bucket_table([info]), title=title)
    return columns, counters, buckets


def _register_admin(actions: Any, spec: CollectionSpec) -> None:
    example = CollectionInfo(spec, 2, 42, dict.fromkeys(SHOWN_COUNTERS, 0) | {"requests": 3})
    listing = actions.add_parser("list", help="every collection: rows, time, columns")
    add_format_option(listing, {"collections list": list_json([example])})
    listing.set_defaults(run=run_list)
    _add_show(actions, example)
    _add_create(actions)
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


def _add_show(actions: Any, example: CollectionInfo) -> None:
    shown = actions.add_parser("show", help="one collection: columns, indexes, row TTLs, counters")
    shown.add_argument("name", help=COLLECTION_HELP)
    bucketed = example_bucketed(example.counters)
    add_format_option(
        shown,
        {
            "collections show compute_frontiers": describe_json(example),
            f"collections show {bucketed.spec.name}": describe_json(bucketed),
        },
    )
    shown.set_defaults(run=run_show)


def _add_create(actions: Any) -> None:
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


def run_show(args: argparse.Namespace) -> int:
    """Shows one collection: its columns, counters and (bucketed) rows per bucket."""
    check_collection_name(args.name)
    store = store_from_env()
    info = collection_info(store, collection_spec(store, args.name).name)
    show(args.format, describe_json(info), *describe_tables(info), headers=not args.no_headers)
    return 0


def request_topic() -> RequestTopic:
    """The request topic (``CM_TOPIC``) whose partitions new bucketed collections are
    assigned; Kafka is asked only when one is created."""
    endpoints = devservices.running(from_env(InfraConfig), needs=("redis",))
    consumer = from_env(ConsumerConfig)
    return RequestTopic(endpoints.kafka_bootstrap, consumer.topic, consumer.topic_partitions)


def _said_created(topic: RequestTopic) -> None:
    if topic.created:
        print(f"created topic {topic.topic} with {topic.partitions(1)} partitions")


def run_create(args: argparse.Namespace) -> int:
    """Creates a collection from a row schema file (refused when it exists with other
    buckets: ``cli/buckets.py``); a new bucketed one's buckets are assigned partitions."""
    spec = _spec_from_file(args.name, args.schema, args.index)  # checked before connecting
    spec = with_buckets(spec, args.buckets, args.bucket_column)
    topic = request_topic()
    [spec] = create_checked(store_from_env(load_functions=True), [spec], topic)
    _said_created(topic)
    spread = f" in {layout(spec)} {placement(spec)}" if spec.buckets > 1 else ""
    print(f"created {args.name}{spread}")
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
    topic = request_topic()
    specs = create_checked(store, specs, topic)
    _said_created(topic)
    spread = {spec.name: f" ({layout(spec)})" if spec.buckets > 1 else "" for spec in specs}
    print("created: " + ", ".join(spec.name + spread[spec.name] for spec in specs))
    for spec in specs:
        if spec.buckets > 1:
            print(f"{spec.name}: {placement(spec)}")
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
