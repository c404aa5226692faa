"""Reading and administering collections: ``query``, ``tail``, ``collections``."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from collection_manager import infra
from collection_manager.commands import print_json, print_table
from collection_manager.config import InfraConfig, from_env
from collection_manager.errors import CollectionManagerError, FilterError, SchemaError
from collection_manager.filters import Filter, and_, eq, is_null
from collection_manager.specs import CollectionSpec, Value
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_specs


def register(commands: Any) -> None:
    """Adds ``query``, ``tail`` and ``collections``."""
    query = commands.add_parser("query", help="a collection's rows at its latest time")
    query.add_argument("collection")
    query.add_argument(
        "--where",
        action="append",
        default=[],
        metavar="COLUMN=VALUE",
        help="keep rows whose column equals the value (repeatable; =null)",
    )
    query.add_argument("--format", choices=["table", "json"], default="table")
    query.set_defaults(run=run_query)

    tail = commands.add_parser("tail", help="a collection's changes since a time")
    tail.add_argument("collection")
    tail.add_argument("--since", type=int, default=0)
    tail.add_argument("--limit", type=int, default=100)
    tail.add_argument("--format", choices=["table", "json"], default="table")
    tail.set_defaults(run=run_tail)

    admin = commands.add_parser("collections", help="list, create, describe or drop")
    admin.add_argument(
        "action", choices=["list", "create", "create-introspection", "describe", "drop"]
    )
    admin.add_argument("name", nargs="?")
    admin.add_argument("--schema", type=Path, help="create: the Avro record schema (.avsc)")
    admin.add_argument(
        "--index",
        action="append",
        default=[],
        metavar="COLUMN",
        help="create: a string or long column to index (repeatable)",
    )
    admin.add_argument("--format", choices=["table", "json"], default="table")
    admin.set_defaults(run=run_admin)


def _store() -> RedisStore:
    return RedisStore.connect(infra.up(from_env(InfraConfig)).redis_url)


def _literal(text: str, column: str, spec: CollectionSpec) -> Value:
    kinds = {c.name: c.type for c in spec.columns}
    kind = kinds[column]
    try:
        if kind == "long":
            return int(text)
        if kind == "double":
            return float(text)
    except ValueError:
        raise FilterError(f"--where {column}={text}: {column} is a {kind} column") from None
    if kind == "boolean":
        if text not in ("true", "false"):
            raise FilterError(f"--where {column}={text}: {column} is boolean (true or false)")
        return text == "true"
    return text


def parse_where(terms: list[str], spec: CollectionSpec) -> Filter | None:
    """The filter of ``--where column=value`` terms (all must hold).

    Raises:
        FilterError: naming the bad term and the valid columns.
    """
    filters: list[Filter] = []
    for term in terms:
        column, sep, text = term.partition("=")
        if not sep or column not in spec.column_names:
            valid = ", ".join(spec.column_names)
            raise FilterError(f"--where {term!r}: expected COLUMN=VALUE with a column of {valid}")
        filters.append(
            is_null(column) if text == "null" else eq(column, _literal(text, column, spec))
        )
    if not filters:
        return None
    return filters[0] if len(filters) == 1 else and_(*filters)


def run_query(args: argparse.Namespace) -> int:
    """Prints the rows (and their multiplicity) at the collection's latest readable time."""
    store = _store()
    spec = store.spec(args.collection)
    snapshot = store.snapshot(args.collection, parse_where(args.where, spec))
    rows = sorted(snapshot.rows.items(), key=lambda item: json.dumps(item[0], default=str))
    if args.format == "json":
        names = spec.column_names
        print_json(
            {
                "as_of": snapshot.as_of,
                "rows": [dict(zip(names, row, strict=True), count=m) for row, m in rows],
            }
        )
    else:
        title = f"{args.collection} as of {snapshot.as_of} ({len(rows)} rows)"
        print_table(title, [*spec.column_names, "count"], [(*row, m) for row, m in rows])
    return 0


def run_tail(args: argparse.Namespace) -> int:
    """Prints the changes at times >= ``--since``."""
    store = _store()
    spec = store.spec(args.collection)
    entries = store.tail(args.collection, args.since, args.limit)
    if args.format == "json":
        print_json([{"time": e.time, "row": list(e.row), "diff": e.diff} for e in entries])
    else:
        print_table(
            f"{args.collection} since {args.since}",
            ["time", *spec.column_names, "diff"],
            [(e.time, *e.row, e.diff) for e in entries],
        )
    return 0


def _spec_from_file(name: str, schema: Path | None, indexed: list[str]) -> CollectionSpec:
    if schema is None:
        raise CollectionManagerError("collections create needs --schema FILE.avsc")
    try:
        row_schema = json.loads(schema.read_text())
    except (OSError, ValueError) as exc:
        raise SchemaError(f"cannot read the row schema {schema}: {exc}") from exc
    return CollectionSpec(name, row_schema, tuple(indexed))


def run_admin(args: argparse.Namespace) -> int:
    """Lists, creates (the built-in introspection ones), describes or drops collections."""
    store = _store()
    if args.action == "create-introspection":
        for spec in introspection_specs():
            store.create_collection(spec)
        print("created: " + ", ".join(spec.name for spec in introspection_specs()))
    elif args.action == "list":
        names = store.collections()
        if args.format == "json":
            print_json(names)
        else:
            print_table("collections", ["name"], [(n,) for n in names])
    elif args.name is None:
        raise CollectionManagerError(f"collections {args.action} needs a collection name")
    elif args.action == "create":
        store.create_collection(_spec_from_file(args.name, args.schema, args.index))
        print(f"created {args.name}")
    elif args.action == "describe":
        spec = store.spec(args.name)
        columns = [
            (c.name, c.type, c.nullable, c.name in spec.indexed_columns) for c in spec.columns
        ]
        if args.format == "json":
            stats = store.stats(spec.name)
            print_json({"name": spec.name, "row_schema": spec.row_schema, "stats": stats})
        else:
            print_table(spec.name, ["column", "type", "nullable", "indexed"], columns)
    else:
        store.spec(args.name)  # unknown collections are an error, not a silent no-op
        store.drop_collection(args.name)
        print(f"dropped {args.name}")
    return 0
