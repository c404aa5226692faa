"""Dropping a collection in bounded steps: its definition at once, then exactly its keys.

Each test makes a collection larger than one step, with an index, a change log, TTLs and
scheduled retractions, drops it, and checks that every key of it is gone (and nothing
else's); a drop stopped half way is finished by the next create of that name.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.drop import CollectionDrop
from collection_manager.storage.keys import CATALOG, CollectionKeys
from collection_manager.storage.library import DROP, function_name
from collection_manager.storage.store import RedisStore

ROW_SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "size", "type": ["null", "long"]},
    ],
}
ROWS = 5_000
STEP_ROWS = 400
FUTURE = 4_000_000_000_000_000  # no retraction timer on the wall clock finds these due


def _keys_of(redis: redis_lib.Redis, name: str) -> set[bytes]:
    return set(redis.scan_iter(match=f"cm:{{{name}}}*", count=10_000))


@pytest.fixture
def loaded(redis: redis_lib.Redis) -> Iterator[tuple[RedisStore, CollectionSpec]]:
    name = f"drop-{uuid.uuid4().hex[:8]}"
    spec = CollectionSpec(name, ROW_SCHEMA, ("replica_id", "worker_id"))
    store = RedisStore(redis)
    store.catalog._drop = CollectionDrop(redis, STEP_ROWS)
    store.create_collection(spec)
    requests: list[Any] = []
    for offset, first in enumerate(range(0, ROWS, 1_000)):
        updates = tuple(((f"r{w % 7}", w, w), 1) for w in range(first, first + 1_000))
        ttl = {"ttl_ms": 100} if offset % 2 else {"valid_until": FUTURE}
        requests.append((offset, Append(name, "r", 1, updates, 0, **ttl)))
    store.apply_requests("t", 0, requests, now_ms=FUTURE - 10**9)
    yield store, spec
    store.drop_collection(name)


def test_a_drop_goes_in_steps_and_leaves_no_key(
    loaded: tuple[RedisStore, CollectionSpec], redis: redis_lib.Redis, monkeypatch: Any
) -> None:
    store, spec = loaded
    before = _keys_of(redis, spec.name)
    assert CollectionKeys(spec.name).index("replica_id", "r3").encode() in before
    calls: list[str] = []
    real = store.catalog._drop._client.fcall
    monkeypatch.setattr(
        store.catalog._drop._client, "fcall", lambda name, *a: calls.append(name) or real(name, *a)
    )
    pauses: list[float] = []
    store.catalog._drop._pause = pauses.append
    store.drop_collection(spec.name)
    assert calls.count(function_name(DROP)) >= ROWS // STEP_ROWS  # bounded steps, not one call
    # Redis is left to others between steps (as long as each step took), not after the last.
    assert len(pauses) == calls.count(function_name(DROP)) - 1 and all(p > 0 for p in pauses)
    assert _keys_of(redis, spec.name) == set()
    assert redis.hget(CATALOG, spec.name) is None
    with pytest.raises(UnknownCollectionError):
        RedisStore(redis).spec(spec.name)


def test_a_drop_stopped_half_way_is_finished_by_the_next_create(
    loaded: tuple[RedisStore, CollectionSpec], redis: redis_lib.Redis, monkeypatch: Any
) -> None:
    store, spec = loaded
    with monkeypatch.context() as patched:  # the command killed after its first step
        steps = iter([True])
        patched.setattr(
            store.catalog._drop, "finish", lambda name: next(steps, None) and _one_step(redis, name)
        )
        store.drop_collection(spec.name)
    keys = CollectionKeys(spec.name)
    assert redis.hget(CATALOG, spec.name) is None  # gone for readers and writers at once
    assert redis.exists(keys.dropping) and 0 < redis.hlen(keys.contents) < ROWS
    store.create_collection(spec)  # finishes the drop first: the new collection is empty
    assert store.snapshot(spec.name).rows == {}
    assert _keys_of(redis, spec.name) == set()
    update = ((("r3", 1, 1), 1),)
    store.apply_requests("t2", 0, [(0, Append(spec.name, "r3", 1, update, 0))])
    assert redis.smembers(keys.index("replica_id", "r3")) == {b'["r3",1,1]'}


def _one_step(redis: redis_lib.Redis, name: str) -> None:
    from collection_manager.storage.library import call

    keys = CollectionKeys(name)
    args = [keys.index_prefix, STEP_ROWS]
    assert call(redis, DROP, [*keys.function_keys(), keys.dropping], args) == b"more"
