"""Names on a real Redis: refused at creation, and a drop deletes exactly its own keys."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
import redis as redis_lib

from collection_manager.core.errors import InvalidNameError
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import redis_client
from collection_manager.storage.keys import CATALOG, CollectionKeys
from collection_manager.storage.store import RedisStore
from tests.integration.own_services import OwnService
from tests.integration.test_store import ROW_SCHEMA


def _keys_of(redis: redis_lib.Redis, collection: str) -> set[bytes]:
    # Tests may look keys up by pattern; the product never deletes by one. The hash tag is
    # matched literally: escape glob characters of the name.
    escaped = "".join(f"\\{c}" if c in "*?[]\\" else c for c in collection)
    return set(redis.scan_iter(match=f"cm:\\{{{escaped}\\}}:*", count=1000))


def _fill(store: RedisStore, collection: str) -> None:
    rows = tuple(((f"r{i}", i, 0.5), 1) for i in range(5))
    store.apply_requests("t", 0, [(0, Append(collection, "r1", 1, rows, 0))])


@pytest.mark.parametrize("name", ["a*", "x?", "x[ab]", "{x}", "a:b", "a b", ""])
def test_a_collection_named_outside_the_rule_is_refused_at_creation(
    redis: redis_lib.Redis, name: str
) -> None:
    with pytest.raises(InvalidNameError, match="collection name"):
        RedisStore(redis).create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id",)))
    assert redis.hget(CATALOG, name) is None


def test_drop_deletes_exactly_the_collections_keys(redis: redis_lib.Redis, unique: str) -> None:
    store = RedisStore(redis)
    doomed, kept = f"{unique}-a", f"{unique}-ab"
    for name in (doomed, kept):
        store.create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id", "worker_id")))
        _fill(store, name)
    kept_keys = _keys_of(redis, kept)
    assert CollectionKeys(kept).index("replica_id", "r3").encode() in kept_keys
    try:
        assert len(_keys_of(redis, doomed)) == len(kept_keys) > 10
        store.drop_collection(doomed)
        assert _keys_of(redis, doomed) == set()
        assert doomed not in store.collections()
        assert _keys_of(redis, kept) == kept_keys
    finally:
        store.drop_collection(kept)
    assert _keys_of(redis, kept) == set()


@pytest.fixture
def own_redis(own_service: Callable[[str], OwnService]) -> Iterator[redis_lib.Redis]:
    """A Redis of the test's own: a catalog entry outside the name rule must not meet the
    listings of tests running beside it."""
    client = redis_client(own_service("redis").address)
    yield client
    client.close()


def test_dropping_a_glob_named_collection_from_before_the_rule_spares_the_others(
    own_redis: redis_lib.Redis, unique: str
) -> None:
    """Reproduces issue 14: dropping ``a*`` deleted the index keys of ``ab``."""
    redis = own_redis
    store = RedisStore(redis)
    kept, legacy = f"{unique}-ab", f"{unique}-a*"
    store.create_collection(CollectionSpec(kept, ROW_SCHEMA, ("replica_id",)))
    _fill(store, kept)
    # A catalog entry written before names were checked.
    record = {"row_schema": ROW_SCHEMA, "indexed_columns": ["replica_id"]}
    redis.hset(CATALOG, legacy, json.dumps(record))
    redis.hset(CollectionKeys(legacy).contents, json.dumps(["r9", 1, None]), 1)
    redis.sadd(CollectionKeys(legacy).index("replica_id", "r9"), json.dumps(["r9", 1, None]))
    kept_keys = _keys_of(redis, kept)
    try:
        assert legacy not in RedisStore(redis).specs()  # skipped: the consumer keeps running
        store.drop_collection(legacy)
        assert _keys_of(redis, legacy) == set()
        assert redis.hget(CATALOG, legacy) is None
        assert _keys_of(redis, kept) == kept_keys
        assert store.snapshot(kept).rows == {(f"r{i}", i, 0.5): 1 for i in range(5)}
    finally:
        store.drop_collection(kept)
