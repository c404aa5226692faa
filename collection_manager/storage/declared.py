"""The collections agents declare for their sources' rows: created when missing, checked
when present, and remembered, so that a replica's removal retracts its rows there too.

The built-in introspection collections are known to the controller; a source plugin's
collections (``producers/sources/``) are not, until an agent declares them. The record is
a set under the replica namespace, bounded by ``MAX_DECLARED`` collections: it grows with
the kinds of sources, never with the replicas.

A declared collection may exist with several buckets (``collections create --buckets``):
its shape is its columns and index, so declaring it is not refused for its buckets, and
its writers route by the catalog's definition (:meth:`DeclaredCollections.catalog_specs`),
not by the source's, which knows no buckets.
"""

from __future__ import annotations

from collections.abc import Sequence

import redis

from collection_manager.core.errors import CollectionManagerError, UnknownCollectionError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.catalog import Catalog, catalogued
from collection_manager.storage.client import as_text
from collection_manager.storage.replica_keys import ReplicaKeys

MAX_DECLARED = 256
"""At most this many declared collections per replica namespace."""


class DeclaredCollections:
    """The declared collections of one replica namespace.

    Args:
        client: Redis (responses not decoded).
        namespace: the replica namespace (``CM_REPLICA_NAMESPACE``).
    """

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self._client = client
        self._key = ReplicaKeys(namespace).collections

    def declare(self, specs: Sequence[CollectionSpec], source: str) -> list[str]:
        """Creates each missing collection and records them all; returns the created ones.

        Raises:
            CollectionManagerError: when one exists with other columns or another index,
                or the namespace would declare over ``MAX_DECLARED`` collections.
        """
        store = Catalog(self._client)
        self._check_room([spec.name for spec in specs])
        created = []
        for spec in specs:
            try:
                existing = store.spec(spec.name)
            except UnknownCollectionError:
                store.create_collection(spec)
                created.append(spec.name)
            else:
                _check_same_shape(existing, spec, source)
            self._client.sadd(self._key, spec.name)
        return created

    def catalog_specs(self, names: Sequence[str]) -> dict[str, CollectionSpec]:
        """The definitions of those of ``names`` the catalog holds, read now: with their
        buckets, which writers route by (the consumer reads the same catalog).

        Read afresh on every call, never cached: a collection dropped and created again
        with other buckets is routed as it is now.
        """
        specs = Catalog(self._client).specs()
        return {name: specs[name] for name in names if name in specs}

    def existing(self) -> list[str]:
        """The declared collections that still exist (one was maybe dropped since)."""
        names = sorted(as_text(name) for name in self._client.smembers(self._key))
        return catalogued(self._client, names)

    def _check_room(self, names: Sequence[str]) -> None:
        new = [name for name in names if not self._client.sismember(self._key, name)]
        if new and self._client.scard(self._key) + len(new) > MAX_DECLARED:
            raise CollectionManagerError(
                f"cannot declare collection {new[0]!r}: this replica namespace has "
                f"{self._client.scard(self._key)} declared collections already, and the bound "
                f"is {MAX_DECLARED} (MAX_DECLARED); drop unused ones"
            )


def _shape(spec: CollectionSpec) -> str:
    columns = ", ".join(f"{c.name} {c.type}{' null' if c.nullable else ''}" for c in spec.columns)
    return f"({columns}) indexed on {', '.join(spec.indexed_columns) or 'nothing'}"


def _check_same_shape(existing: CollectionSpec, wanted: CollectionSpec, source: str) -> None:
    same = existing.columns == wanted.columns and (
        existing.indexed_columns == wanted.indexed_columns
    )
    if not same:
        raise CollectionManagerError(
            f"collection {wanted.name!r} exists as {_shape(existing)}, but source {source} "
            f"publishes {_shape(wanted)}: drop it (collection-manager collections drop) or "
            "publish elsewhere (CM_COLLECTION_SUFFIX)"
        )
