"""Readying Redis for the consumer, once it holds its claim and before Spark (run.py)."""

from __future__ import annotations

from collection_manager.storage.catalog import Catalog
from collection_manager.storage.client import connected_client
from collection_manager.storage.library import install
from collection_manager.storage.writes import StoreWriter
from schemas.introspection import introspection_specs


def ensure_introspection_collections(store: Catalog) -> None:
    """Creates the built-in introspection collections that do not exist yet."""
    existing = set(store.collections())
    for spec in introspection_specs():
        if spec.name not in existing:
            store.create_collection(spec)


def prepared_store(redis_url: str) -> StoreWriter:
    """A writer on Redis at ``redis_url``, readied for this version of the consumer."""
    client = connected_client(redis_url)
    # This version's functions, beside those of other versions (docs/concepts/upgrades.md).
    install(client)
    store = StoreWriter(client)
    ensure_introspection_collections(store.catalog)
    store.finish_deletes()  # one a stopped consumer left half done becomes readable now
    return store
