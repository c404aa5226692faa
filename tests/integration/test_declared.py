"""Declared collections on a real Redis: a source's missing collections are created, one of
another shape is refused with both shapes named, the record is bounded, and a removal
retracts from the declared collections that still exist."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis as redis_lib

from collection_manager.core.errors import CollectionManagerError
from collection_manager.storage import declared as declared_module
from collection_manager.storage.declared import DeclaredCollections
from collection_manager.storage.store import RedisStore
from producers.sources.plugin import SourceCollection, field


@pytest.fixture
def namespace(redis: redis_lib.Redis, unique: str) -> Iterator[str]:
    name = f"cm:replicas:{unique}"
    yield name
    store = RedisStore(redis)
    for collection in store.collections():
        if collection.endswith(unique):
            store.drop_collection(collection)
    keys = list(redis.scan_iter(match=f"{name}:*"))
    if keys:
        redis.delete(*keys)


def _shape(name: str, value_type: str = "double") -> SourceCollection:
    return SourceCollection(name, (field("key", "string"), field("value", value_type)))


def test_missing_collections_are_created_and_same_shaped_ones_kept(
    redis: redis_lib.Redis, namespace: str, unique: str
) -> None:
    declared = DeclaredCollections(redis, namespace)
    specs = [_shape(name).spec(f"-{unique}") for name in ("a", "b")]
    assert declared.declare(specs, "test") == [f"a-{unique}", f"b-{unique}"]
    assert RedisStore(redis).spec(f"a-{unique}").column_names == ("replica_id", "key", "value")
    assert declared.declare(specs, "test") == []  # a second agent: nothing to create
    assert declared.existing() == [f"a-{unique}", f"b-{unique}"]
    RedisStore(redis).drop_collection(f"b-{unique}")
    assert declared.existing() == [f"a-{unique}"]  # a removal skips a dropped one


def test_a_collection_of_another_shape_is_refused_naming_both(
    redis: redis_lib.Redis, namespace: str, unique: str
) -> None:
    declared = DeclaredCollections(redis, namespace)
    declared.declare([_shape("a").spec(f"-{unique}")], "first")
    other = _shape("a", "long").spec(f"-{unique}")
    with pytest.raises(CollectionManagerError) as refused:
        declared.declare([other], "second")
    assert str(refused.value) == (
        f"collection 'a-{unique}' exists as (replica_id string, key string, value double) "
        "indexed on replica_id, but source second publishes (replica_id string, key string, "
        "value long) indexed on replica_id: drop it (collection-manager collections drop) or "
        "publish elsewhere (CM_COLLECTION_SUFFIX)"
    )


def test_declaring_past_the_bound_is_refused_with_the_bound_named(
    redis: redis_lib.Redis, namespace: str, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(declared_module, "MAX_DECLARED", 2)
    declared = DeclaredCollections(redis, namespace)
    declared.declare([_shape(n).spec(f"-{unique}") for n in ("a", "b")], "test")
    with pytest.raises(
        CollectionManagerError, match="has 2 declared collections already, and the bound is 2"
    ):
        declared.declare([_shape("c").spec(f"-{unique}")], "test")
    assert f"c-{unique}" not in RedisStore(redis).collections()  # refused before creating
    declared.declare([_shape("a").spec(f"-{unique}")], "test")  # known: no room needed
