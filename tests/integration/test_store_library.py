"""The store's Redis Functions library on a real Redis: loading, replacing, undeclared keys."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis as redis_lib

from collection_manager.core.filters import eq
from collection_manager.core.planning import SourceUpdates
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.library import LIBRARY, VERSION_FUNCTION, library
from collection_manager.storage.ops import AppendOp, DeleteOp
from collection_manager.storage.store import RedisStore

ROW_SCHEMA = {
    "type": "record",
    "name": "pairs",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
    ],
}
# What an older version of the library may look like: only its version function matters.
OLD_LIBRARY = f"""#!lua name={LIBRARY}
redis.register_function('{VERSION_FUNCTION}', function() return 'old' end)"""


def loaded_version(redis: redis_lib.Redis) -> bytes:
    return bytes(redis.fcall(VERSION_FUNCTION, 0))


def appended(offset: int, replica: str, workers: int) -> AppendOp:
    updates = tuple(((replica, worker), 1) for worker in range(workers))
    return AppendOp(offset, offset, [SourceUpdates(replica, 1, None, None, updates, 1)])


@pytest.fixture(scope="module")
def redis(module_redis_client: redis_lib.Redis) -> redis_lib.Redis:
    """A Redis of this module's own: its tests replace and delete the functions library,
    which every other test calls (in the other xdist worker too, at the same moment)."""
    return module_redis_client


@pytest.fixture
def collection(redis: redis_lib.Redis, unique: str) -> Iterator[str]:
    store = RedisStore(redis)
    store.create_collection(CollectionSpec(unique, ROW_SCHEMA, ("replica_id",)))
    yield unique
    store.drop_collection(unique)


def test_an_older_library_is_replaced_on_connect(redis: redis_lib.Redis, collection: str) -> None:
    redis.function_load(OLD_LIBRARY, replace=True)
    assert loaded_version(redis) == b"old"
    store = RedisStore(redis)
    assert loaded_version(redis) == library()[1].encode()
    assert store.apply(collection, "t", 0, [appended(0, "r1", 3)])["updates"] == 3


def test_a_lost_library_is_loaded_again_on_the_next_call(
    redis: redis_lib.Redis, collection: str
) -> None:
    store = RedisStore(redis)
    redis.function_delete(LIBRARY)
    assert store.apply(collection, "t", 0, [appended(0, "r1", 2)])["updates"] == 2
    redis.function_delete(LIBRARY)
    assert len(store.snapshot(collection, eq("replica_id", "r1")).rows) == 2


def test_functions_reach_index_keys_they_derive_and_do_not_declare(
    redis: redis_lib.Redis, collection: str
) -> None:
    # Redis Functions, like scripts, may touch undeclared keys on a single (non-cluster) node.
    store = RedisStore(redis)
    store.apply(collection, "t", 0, [appended(0, "r1", 2), appended(1, "r2", 3)])
    index = CollectionKeys(collection).index
    assert redis.scard(index("replica_id", "r1")) == 2
    assert len(store.snapshot(collection, eq("replica_id", "r2")).rows) == 3
    store.apply(collection, "t", 0, [DeleteOp(2, ["replica_id:r2"], None)])
    assert redis.exists(index("replica_id", "r2")) == 0
    assert set(store.snapshot(collection).rows) == {("r1", 0), ("r1", 1)}
