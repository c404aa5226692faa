"""The store of one Redis as one object: a thin facade over its three directions.

The catalog (``catalog.py``: specs, create, drop), the writer (``writes.py``: apply,
retract, expire, settle cuts, refused appends) and the reader (``reads.py``: snapshots,
stepped and streamed reads, cuts, the change log) are its attributes. New code takes the
direction it uses; the methods here are the ones the HTTP API and the benchmarks still call.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import redis

from collection_manager.core.cut import Cut
from collection_manager.core.filters import Filter
from collection_manager.core.planning import MAX_GROUP_UPDATES
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.client import connected_client
from collection_manager.storage.library import install
from collection_manager.storage.planning import OffsetRequest
from collection_manager.storage.reads import CutChanges, LogEntry, Snapshot, StoreReader
from collection_manager.storage.writes import DELETE_STEP_ROWS, StoreWriter, wall_clock_ms

__all__ = ["DELETE_STEP_ROWS", "LogEntry", "RedisStore", "Snapshot", "wall_clock_ms"]


class RedisStore:
    """Storage collections in one Redis (or one Redis Cluster slot per collection).

    Args:
        client: a Redis client; responses must not be decoded (rows are compared as bytes).
        log_max_length, chunk_updates, delete_step_rows: the writer's (``StoreWriter``).

    Raises:
        LayoutError: when Redis holds a store layout this version does not serve.
    """

    def __init__(
        self,
        client: redis.Redis,
        log_max_length: int = 1_000_000,
        chunk_updates: int = MAX_GROUP_UPDATES,
        delete_step_rows: int = DELETE_STEP_ROWS,
    ) -> None:
        self._client = client
        self.catalog = Catalog(client)
        self.reader = StoreReader(client, self.catalog)
        self.writer = StoreWriter(
            client, self.catalog, log_max_length, chunk_updates, delete_step_rows
        )

    @classmethod
    def connect(cls, url: str, load_functions: bool = False, **kwargs: Any) -> RedisStore:
        """Connects and pings, so that a wrong address fails here with a clear message.

        Args:
            url: the Redis (or any node of a Redis Cluster).
            load_functions: first load this version's store functions beside other
                versions' (``library.install``), as the processes that write collections
                do; readers never load them (docs/concepts/upgrades.md).
            kwargs: as for the constructor.
        """
        client = connected_client(url)
        if load_functions:
            install(client)
        return cls(client, **kwargs)

    # The catalog's

    def spec(self, collection: str) -> CollectionSpec:
        """``Catalog.spec``."""
        return self.catalog.spec(collection)

    def specs(self) -> dict[str, CollectionSpec]:
        """``Catalog.specs``."""
        return self.catalog.specs()

    def collections(self) -> list[str]:
        """``Catalog.collections``."""
        return self.catalog.collections()

    def create_collection(self, spec: CollectionSpec) -> None:
        """``Catalog.create_collection``."""
        self.catalog.create_collection(spec)

    def drop_collection(self, collection: str) -> None:
        """``Catalog.drop_collection``."""
        self.catalog.drop_collection(collection)

    # The writer's

    def apply_requests(
        self,
        topic: str,
        partition: int,
        requests: Sequence[OffsetRequest],
        validated: bool = False,
        now_ms: int | None = None,
    ) -> dict[str, dict[str, int]]:
        """``StoreWriter.apply_requests``."""
        return self.writer.apply_requests(topic, partition, requests, validated, now_ms)

    def applied_offset(self, collection: str, topic: str, partition: int) -> int:
        """``StoreWriter.applied_offset``."""
        return self.writer.applied_offset(collection, topic, partition)

    def retract_due(
        self, collection: str, now_ms: int, ttl_clock_ms: int | None = None
    ) -> dict[str, int]:
        """``StoreWriter.retract_due``."""
        return self.writer.retract_due(collection, now_ms, ttl_clock_ms)

    def set_expiration(self, collection: str, expiration_ms: int | None) -> int:
        """``StoreWriter.set_expiration``."""
        return self.writer.set_expiration(collection, expiration_ms)

    def finish_deletes(self) -> None:
        """``StoreWriter.finish_deletes``."""
        self.writer.finish_deletes()

    # The reader's

    def snapshot(self, collection: str, where: Filter | None = None) -> Snapshot:
        """``StoreReader.snapshot``."""
        return self.reader.snapshot(collection, where)

    def stepped_snapshot(
        self, collection: str, where: Filter | None = None, limit: int | None = None
    ) -> Snapshot:
        """``StoreReader.stepped_snapshot``."""
        return self.reader.stepped_snapshot(collection, where, limit)

    def cut(self, collection: str, readable: bool = False) -> Cut:
        """``StoreReader.cut``."""
        return self.reader.cut(collection, readable)

    def tail_buckets(
        self, collection: str, since: Cut | None = None, limit: int | None = None
    ) -> CutChanges:
        """``StoreReader.tail_buckets``."""
        return self.reader.tail_buckets(collection, since, limit)

    def size(self, collection: str) -> tuple[int, int]:
        """``StoreReader.size``."""
        return self.reader.size(collection)

    def stats(self, collection: str) -> dict[str, int]:
        """``StoreReader.stats``."""
        return self.reader.stats(collection)

    def ttl_summary(self, collection: str) -> tuple[int, int | None]:
        """``StoreReader.ttl_summary``."""
        return self.reader.ttl_summary(collection)

    def scheduled(self, collection: str) -> int:
        """``StoreReader.scheduled``."""
        return self.reader.scheduled(collection)
