"""The command line's side of bucketed collections (docs/howto/buckets.md): ``--buckets``
and ``--bucket-column`` of the creating commands, and the refusal to change the buckets of
a collection that exists.

Why refuse: a row's bucket is CRC-32 of its bucket column mod N, so another N (or column)
puts the rows already stored, the fences and the watermarks in the wrong units, and
agents route by the N they read at their start. Changing it is an offline step: stop the
writers, drop the collection, create it with the new N, restart the agents (they publish
fresh snapshots); a running consumer follows the catalog's new record by itself.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

from collection_manager.cli.partitions import RequestTopic, placed
from collection_manager.config.errors import UsageError
from collection_manager.core.buckets import DEFAULT_BUCKET_COLUMN, MAX_BUCKETS
from collection_manager.core.errors import CollectionManagerError, UnknownCollectionError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore

BUCKETS_BOUND = f"1 to {MAX_BUCKETS} (MAX_BUCKETS)"
PER_BUCKET_UPDATES_S = 70_000
"""Updates per second one bucket takes comfortably (docs/concepts/buckets.md, "The capacity plan"):
a third of a Redis core, below what one Kafka partition applied."""


def buckets_argument(text: str) -> int:
    """An argparse type: a number of buckets, ``1 <= N <= MAX_BUCKETS``."""
    try:
        value = int(text)
    except ValueError:
        value = None
    if value is None or not 1 <= value <= MAX_BUCKETS:
        raise argparse.ArgumentTypeError(f"a collection has {BUCKETS_BOUND} buckets, not {text!r}")
    return value


def add_bucket_options(parser: argparse.ArgumentParser, column: bool = True) -> None:
    """Adds ``--buckets N`` (default 1) and, with ``column``, ``--bucket-column COLUMN``."""
    parser.add_argument(
        "--buckets",
        type=buckets_argument,
        default=1 if column else None,
        metavar="N",
        help=f"spread it over N buckets, {BUCKETS_BOUND}, each its own Redis hash slot, "
        "Kafka key and partition (a new collection's buckets are assigned the partitions "
        "of CM_TOPIC, read from Kafka; a missing topic is created with a partition per "
        f"bucket); about {PER_BUCKET_UPDATES_S:,} updates/s per bucket is "
        "comfortable (default "
        + ("1: one unit, today's layout" if column else "each existing one's, 1 for a new one")
        + "); the buckets of a collection that exists cannot change",
    )
    if column:
        parser.add_argument(
            "--bucket-column",
            default=DEFAULT_BUCKET_COLUMN,
            metavar="COLUMN",
            help="the non-nullable string or long column whose value picks a row's bucket "
            f"(default {DEFAULT_BUCKET_COLUMN}: a replica's rows in one bucket, so its "
            "removal touches one)",
        )


def with_buckets(spec: CollectionSpec, buckets: int, column: str) -> CollectionSpec:
    """``spec`` spread over ``buckets`` by ``column``.

    Raises:
        UsageError: for a bucket column other than the default with one bucket, which
            would pick nothing (and the catalog would not keep it).
        SchemaError: when the column cannot pick buckets (missing, nullable, not a string
            or long).
    """
    if buckets == 1 and column != DEFAULT_BUCKET_COLUMN:
        raise UsageError(
            f"--bucket-column {column} picks among buckets: give --buckets N as well "
            f"(N from 2 to {MAX_BUCKETS}, MAX_BUCKETS)"
        )
    return dataclasses.replace(spec, buckets=buckets, bucket_column=column)


def layout(spec: CollectionSpec) -> str:
    """How a collection is spread, in words: ``1 bucket`` or ``4 buckets by replica_id``."""
    if spec.buckets == 1:
        return "1 bucket"
    return f"{spec.buckets} buckets by {spec.bucket_column}"


def bucket_change(existing: CollectionSpec, wanted: CollectionSpec) -> str | None:
    """Why ``wanted`` cannot replace ``existing`` (one line naming both layouts and the
    offline path), or None when their buckets agree."""
    if layout(existing) == layout(wanted):
        return None
    name = existing.name
    return (
        f"collection {name} exists with {layout(existing)}, not {layout(wanted)}: the "
        "buckets of a live collection cannot change. Offline: stop its writers, "
        f"`collection-manager collections drop {name}`, create it with --buckets "
        f"{wanted.buckets}, then restart the agents, which publish fresh snapshots "
        "(docs/howto/buckets.md, Changing N)"
    )


def existing_spec(store: RedisStore, name: str) -> CollectionSpec | None:
    """The catalog's definition of ``name``, or None when there is none."""
    try:
        return store.spec(name)
    except UnknownCollectionError:
        return None


def keep_buckets(store: RedisStore, spec: CollectionSpec) -> CollectionSpec:
    """``spec`` with the buckets of the collection of its name, when one exists."""
    existing = existing_spec(store, spec.name)
    if existing is None:
        return spec
    return with_buckets(spec, existing.buckets, existing.bucket_column)


def create_checked(
    store: RedisStore, specs: Sequence[CollectionSpec], topic: RequestTopic | None = None
) -> list[CollectionSpec]:
    """Creates (or redefines, as before buckets) each collection; when one exists with
    other buckets, refuses before any is written. A new bucketed collection's buckets are
    assigned partitions of ``topic`` (``cli/partitions.py``); one that exists keeps its
    own, or none. Returns the definitions as created.

    Raises:
        CollectionManagerError: naming the collection, both layouts and the offline path;
            or why the topic's partitions could not be read.
    """
    found = {spec.name: existing_spec(store, spec.name) for spec in specs}
    for spec in specs:
        existing = found[spec.name]
        problem = None if existing is None else bucket_change(existing, spec)
        if problem is not None:
            raise CollectionManagerError(problem)  # it names the collection already
    created = [placed(spec, found[spec.name], topic) for spec in specs]
    for spec in created:
        store.create_collection(spec)
    return created
