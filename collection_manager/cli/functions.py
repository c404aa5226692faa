"""``functions list|load|remove``: the store's Redis libraries of every version
(docs/concepts/upgrades.md).

Readers and agents never load or replace a library; ``consumer run`` loads its own when
it starts. An operator loads a new version's library ahead of a rollout (so that new readers
work before the new consumer runs) and removes an old one once no live process uses it.
"""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from collection_manager import devservices
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.output import TableView, add_format_option, show
from collection_manager.config import InfraConfig, from_env
from collection_manager.storage.client import connected_client
from collection_manager.storage.layout import LAYOUT_KEY, stored_layout
from collection_manager.storage.libraries import LoadedLibrary, loaded_libraries, remove_library
from collection_manager.storage.library import install, library_name

EXAMPLE = [LoadedLibrary("cm_0123456789abcdef", 1, "consumer:cm.requests", True)]


def register(commands: Any) -> None:
    """Adds ``functions list``, ``functions load`` and ``functions remove``."""
    functions = commands.add_parser(
        "functions", help="the store's Redis function libraries, one per version"
    )
    actions = functions.add_subparsers(dest="action", required=True)
    listed = actions.add_parser(
        "list",
        help="every version's library in Redis, whether a live process uses it, "
        "and the store layout Redis records",
    )
    add_format_option(listed, {"functions list": listing_json(EXAMPLE, 1)})
    listed.set_defaults(run=run_list)
    load = actions.add_parser(
        "load",
        help="load this version's library beside the others (before a rollout: "
        "readers of this version need it; consumer run loads it too)",
    )
    load.set_defaults(run=run_load)
    remove = actions.add_parser(
        "remove", help="remove an old version's library; refused while a live process uses it"
    )
    remove.add_argument("name", help="the library, as `functions list` names it (cm_<hash>)")
    add_confirmation(remove)
    remove.set_defaults(run=run_remove)


def listing_json(libraries: list[LoadedLibrary], layout: int | str) -> dict[str, Any]:
    """What ``functions list --format json`` prints."""
    return {"layout": layout, "libraries": [dataclasses.asdict(lib) for lib in libraries]}


def listing_table(libraries: list[LoadedLibrary], layout: int | str) -> TableView:
    """A line per library, this version's marked."""
    return TableView(
        title=f"store libraries: {len(libraries)} (store layout {layout}, {LAYOUT_KEY})",
        columns=["library", "primaries", "used by", "this version"],
        rows=[
            (lib.name, lib.primaries, lib.user, "yes" if lib.current else "") for lib in libraries
        ],
        empty="no store library loaded: `consumer run` or `functions load` loads this version's",
        null="-",
    )


def _client() -> Any:
    endpoints = devservices.running(from_env(InfraConfig), needs=("redis",))
    return connected_client(endpoints.redis_url)


def run_list(args: argparse.Namespace) -> int:
    """Lists the store's libraries in Redis."""
    client = _client()
    try:
        libraries, layout = loaded_libraries(client), stored_layout(client)
    finally:
        client.close()
    tables = (listing_table(libraries, layout),)
    show(args.format, listing_json(libraries, layout), *tables, headers=not args.no_headers)
    return 0


def run_load(_args: argparse.Namespace) -> int:
    """Loads this version's library (and records the layout where none is)."""
    client = _client()
    try:
        install(client)
    finally:
        client.close()
    print(f"loaded {library_name()}")
    return 0


def run_remove(args: argparse.Namespace) -> int:
    """Removes one library that no live process uses, once confirmed."""
    what = f"remove the store library {args.name} from every Redis primary"
    if (code := stop_before(args, what)) is not None:
        return code
    client = _client()
    try:
        remove_library(client, args.name)
    finally:
        client.close()
    print(f"removed {args.name}")
    return 0
