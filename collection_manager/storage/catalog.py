"""The catalog: each collection's definition (its spec), created, read and dropped.

The catalog is one Redis hash (``keys.CATALOG``): a collection's name -> its JSON record
(:func:`catalog_record`). This module alone reads and writes it; the writer
(``writes.py``) and the reader (``reads.py``) ask it for specs.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Sequence
from typing import Any, cast

import redis

from collection_manager.core.buckets import DEFAULT_BUCKET_COLUMN, split_unit
from collection_manager.core.errors import (
    CollectionManagerError,
    SchemaError,
    UnknownCollectionError,
)
from collection_manager.core.partitions import Partitioning
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import as_text
from collection_manager.storage.drop import CollectionDrop
from collection_manager.storage.keys import CATALOG
from collection_manager.storage.layout import check_layout

logger = logging.getLogger(__name__)


def spec_of(name: str, raw: bytes | str) -> CollectionSpec:
    """The spec of collection ``name`` from its catalog record ``raw``."""
    record = json.loads(raw)
    # A collection created before buckets has no "buckets": one, today's layout.
    buckets = record.get("buckets", 1)
    column = record.get("bucket_column", DEFAULT_BUCKET_COLUMN)
    indexed = tuple(record["indexed_columns"])
    # One created before partition assignments has none: its keys' hashes place it.
    assigned = record.get("partitioning")
    partitioning = None if assigned is None else _partitioning_of(name, assigned)
    return CollectionSpec(name, record["row_schema"], indexed, buckets, column, None, partitioning)


def _partitioning_of(name: str, record: Any) -> Partitioning:
    try:
        return Partitioning(record["topic"], record["partitions"], tuple(record["assigned"]))
    except (KeyError, TypeError) as exc:
        raise SchemaError(
            f"the partition assignment of {name} in the catalog is damaged: {record!r}",
            collection=name,
        ) from exc


def catalog_record(spec: CollectionSpec) -> str:
    """The catalog's JSON of a collection (``buckets`` only when it has several, so an
    unbucketed collection's record is byte for byte 0.1.0's; ``partitioning`` only when
    its buckets were assigned partitions, which readers of older versions leave aside)."""
    record: dict[str, Any] = {
        "row_schema": spec.row_schema,
        "indexed_columns": list(spec.indexed_columns),
    }
    if spec.buckets > 1:
        record.update(buckets=spec.buckets, bucket_column=spec.bucket_column)
    if spec.partitioning is not None:
        record["partitioning"] = dataclasses.asdict(spec.partitioning)
    return json.dumps(record)


def catalog_records(client: redis.Redis) -> list[tuple[str, bytes | str]]:
    """Every collection's name and raw record, in one read (no layout check, no parse)."""
    return [(as_text(name), raw) for name, raw in client.hgetall(CATALOG).items()]


def raw_record(client: redis.Redis, name: str) -> bytes | None:
    """``name``'s record as stored, or None: a follower of a collection compares it with
    the one it began with to tell a collection dropped or created again."""
    return cast(bytes | None, client.hget(CATALOG, name))


def catalogued(client: redis.Redis, names: Sequence[str]) -> list[str]:
    """Those of ``names`` the catalog holds now, in their order: one read, none when
    ``names`` is empty, and no layout check (a controller asks at every removal)."""
    if not names:
        return []
    found = client.hmget(CATALOG, list(names))
    return [name for name, raw in zip(names, found, strict=True) if raw is not None]


class Catalog:
    """The collections of one Redis, by name, with their specs cached.

    Args:
        client: a Redis client (responses not decoded).

    Raises:
        LayoutError: when Redis holds a store layout this version does not serve.
    """

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        check_layout(client)
        self._drop = CollectionDrop(client)
        self._specs: dict[str, CollectionSpec] = {}
        self._records: dict[str, bytes | str] = {}  # the catalog's record of each spec
        self._skipped: set[str] = set()  # catalog names outside the name rule, warned once

    def create_collection(self, spec: CollectionSpec) -> None:
        """Registers a collection (replacing the definition of one with the same name).

        The name was checked against the name rule when ``spec`` was made (``core/names.py``).
        """
        self._drop.finish(spec.name)  # a drop of that name that stopped half way: end it
        self._client.hset(CATALOG, spec.name, catalog_record(spec))
        self._specs[spec.name] = spec

    def spec(self, collection: str) -> CollectionSpec:
        """The definition of ``collection``, or of one bucket's storage unit (``c#b``).

        Raises:
            UnknownCollectionError: when no such collection was created.
            InvalidNameError: for a name created before the name rule (``core/names.py``).
            SchemaError: for a bucket the collection does not have.
        """
        name, bucket = split_unit(collection)
        if bucket is not None:
            if collection not in self._specs:
                self._specs[collection] = self.spec(name).unit(bucket)
            return self._specs[collection]
        if collection not in self._specs:
            raw = self._client.hget(CATALOG, collection)
            if raw is None:
                known = ", ".join(self.collections()) or "none"
                raise UnknownCollectionError(
                    f"unknown collection {collection!r}; known: {known}", collection=collection
                )
            self._specs[collection] = spec_of(collection, raw)
        return self._specs[collection]

    def specs(self) -> dict[str, CollectionSpec]:
        """Every collection's definition, by name, from one read of the catalog.

        One read, so a collection dropped meanwhile cannot fail the call (the consumer
        calls it every micro-batch). An entry that is no valid definition (a name from
        before the name rule, ``core/names.py``) is left out with a warning: requests
        naming it are refused, the consumer keeps running, and it can still be dropped.
        """
        specs = {}
        for key, raw in sorted(self._client.hgetall(CATALOG).items()):
            name = as_text(key)
            if name in self._specs and self._records.get(name) != raw:
                self._forget(name)  # dropped and created again since, maybe with other buckets
            self._records[name] = raw
            if name not in self._specs:
                try:
                    self._specs[name] = spec_of(name, raw)
                except CollectionManagerError as exc:
                    if name not in self._skipped:
                        self._skipped.add(name)
                        logger.warning("ignoring collection %r: %s; drop it", name, exc)
                    continue
            specs[name] = self._specs[name]
        return specs

    def unit_specs(self) -> list[CollectionSpec]:
        """The spec of every storage unit: each collection, or each bucket of a bucketed one."""
        return [unit for spec in self.specs().values() for unit in spec.units()]

    def collections(self) -> list[str]:
        """Names of all collections, sorted."""
        return sorted(as_text(name) for name in self._client.hkeys(CATALOG))

    def drop_collection(self, collection: str) -> None:
        """Deletes a collection: its definition at once, then exactly its keys (never keys
        matched by a pattern) in bounded steps (``storage/drop.py``)."""
        self._forget(collection)
        self._drop.drop(collection)

    def _forget(self, collection: str) -> None:
        """Forgets the cached specs of ``collection`` and of its buckets (``c#b``)."""
        for name in [n for n in self._specs if split_unit(n)[0] == collection]:
            del self._specs[name]
