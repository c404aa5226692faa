"""The store's Redis Functions libraries on a real Redis: versions side by side, readers
that never load, the layout record, undeclared keys (docs/concepts/upgrades.md)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator

import pytest
import redis as redis_lib

from collection_manager.cli.main import main
from collection_manager.core.filters import eq
from collection_manager.core.planning import SourceUpdates
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage import library as library_module
from collection_manager.storage.errors import FunctionsNotLoadedError, LayoutError, StorageError
from collection_manager.storage.heartbeats import CONSUMER, Heartbeat
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.layout import LAYOUT, LAYOUT_KEY
from collection_manager.storage.libraries import in_use_key, loaded_libraries, remove_library
from collection_manager.storage.library import install, library_name
from collection_manager.storage.ops import AppendOp, DeleteOp
from collection_manager.storage.store import RedisStore
from tests.integration.own_services import OwnService
from tests.support import assert_eventually

ROW_SCHEMA = {
    "type": "record",
    "name": "pairs",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
    ],
}
# What 0.1.0's library looks like to Redis: named plain `cm`, functions `cm_<name>`.
THIS: list[str] = []
OTHER = "cm_" + "f" * 16
FIRST_LIBRARY = """#!lua name=cm
redis.register_function{function_name = 'cm_version', callback = function() return 'first' end,
  flags = {'no-writes'}}"""


def appended(offset: int, replica: str, workers: int) -> AppendOp:
    updates = tuple(((replica, worker), 1) for worker in range(workers))
    return AppendOp(offset, offset, [SourceUpdates(replica, 1, None, None, updates, 1)])


@pytest.fixture(scope="module")
def redis(module_redis_client: redis_lib.Redis) -> redis_lib.Redis:
    """A Redis of this module's own: its tests load, delete and flush libraries, which every
    other test calls (in the other xdist worker too, at the same moment)."""
    return module_redis_client


@pytest.fixture
def collection(redis: redis_lib.Redis, unique: str) -> Iterator[str]:
    install(redis)
    store = RedisStore(redis)
    store.create_collection(CollectionSpec(unique, ROW_SCHEMA, ("replica_id",)))
    yield unique
    store.drop_collection(unique)


def as_another_version(monkeypatch: pytest.MonkeyPatch) -> str:
    """This process, for the test's length, as a version whose library differs (the name
    of this version's library stays in ``THIS``)."""
    source, version = library_module.library()
    THIS.append(library_name())
    changed = source.replace(version, OTHER.removeprefix("cm_"))
    monkeypatch.setattr(library_module, "library", lambda: (changed, OTHER.removeprefix("cm_")))
    return OTHER


@pytest.fixture
def another_version(monkeypatch: pytest.MonkeyPatch) -> str:
    """The test runs as another version (``as_another_version``)."""
    return as_another_version(monkeypatch)


def names(redis: redis_lib.Redis) -> set[str]:
    return {lib.name for lib in loaded_libraries(redis)}


def everything(redis: redis_lib.Redis) -> dict[bytes, bytes]:
    """Every key with a digest of its value, and the libraries: what a reader must not change."""
    keys = {key: redis.dump(key) for key in redis.scan_iter(count=1000)}
    return {**keys, b"FUNCTIONS": redis.function_dump()}


def test_libraries_of_two_versions_live_side_by_side(
    redis: redis_lib.Redis, collection: str, another_version: str
) -> None:
    redis.function_load(FIRST_LIBRARY, replace=True)
    install(redis)  # the other version's consumer starts
    assert {"cm", THIS[-1], another_version} <= names(redis)
    store = RedisStore(redis)
    assert store.writer.apply(collection, "t", 0, [appended(0, "r1", 3)])["updates"] == 3
    assert redis.fcall("cm_version", 0) == b"first"  # 0.1.0's library is untouched
    this_version = THIS[-1].removeprefix("cm_")
    assert redis.fcall(f"{THIS[-1]}_version", 0) == this_version.encode()  # and this one's


def test_a_reader_of_another_version_changes_nothing_and_says_how_to_load(
    redis: redis_lib.Redis, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    RedisStore(redis).writer.apply(collection, "t", 0, [appended(0, "r1", 2)])  # this version's
    with contextlib.suppress(redis_lib.ResponseError):  # left by another test
        redis.function_delete(OTHER)
    before = everything(redis)
    as_another_version(monkeypatch)
    with pytest.raises(FunctionsNotLoadedError, match="functions load"):
        RedisStore(redis).snapshot(collection, eq("replica_id", "r1"))
    assert everything(redis) == before
    install(redis)  # `functions load` of the other version: then it reads
    assert len(RedisStore(redis).snapshot(collection, eq("replica_id", "r1")).rows) == 2


def test_a_lost_library_is_loaded_again_by_a_write_never_by_a_read(
    redis: redis_lib.Redis, collection: str
) -> None:
    store = RedisStore(redis)
    redis.function_delete(library_name())
    assert store.writer.apply(collection, "t", 0, [appended(0, "r1", 2)])["updates"] == 2
    redis.function_delete(library_name())
    with pytest.raises(FunctionsNotLoadedError):
        store.snapshot(collection, eq("replica_id", "r1"))
    assert library_name() not in names(redis)


def test_the_layout_is_recorded_once_and_another_is_refused(
    redis: redis_lib.Redis, collection: str
) -> None:
    assert redis.get(LAYOUT_KEY) == str(LAYOUT).encode()
    redis.set(LAYOUT_KEY, LAYOUT + 1)
    try:
        with pytest.raises(LayoutError) as refused:
            RedisStore(redis)
        with pytest.raises(LayoutError):
            install(redis)  # a consumer neither loads nor records over a newer layout
        assert str(refused.value).startswith(
            f"Redis holds store layout {LAYOUT + 1}, which collection-manager "
        )
        assert f"(it serves layout {LAYOUT})" in str(refused.value)
        assert redis.get(LAYOUT_KEY) == str(LAYOUT + 1).encode()
    finally:
        redis.set(LAYOUT_KEY, LAYOUT)


def test_a_library_in_use_is_not_removed(
    redis: redis_lib.Redis,
    module_redis: OwnService,
    collection: str,
    another_version: str,
    unique: str,
) -> None:
    install(redis)
    beat = Heartbeat(module_redis.address, CONSUMER, unique, library=another_version).start()

    def marked_in_use() -> None:
        assert redis.exists(in_use_key(another_version)) == 1

    try:
        assert_eventually(marked_in_use, timeout=10)
        with pytest.raises(StorageError, match=f"in use by the live consumer:{unique}"):
            remove_library(redis, another_version)
    finally:
        beat.stop()
    redis.delete(in_use_key(another_version))  # as its expiry would, ALIVE_EXPIRY_S later
    remove_library(redis, another_version)
    assert another_version not in names(redis)
    with pytest.raises(StorageError, match="no library of the store"):
        remove_library(redis, "mylib")
    with pytest.raises(StorageError, match="no library of the store"):
        remove_library(redis, "cm_another_program")


def test_functions_reach_index_keys_they_derive_and_do_not_declare(
    redis: redis_lib.Redis, collection: str
) -> None:
    # Redis Functions, like scripts, may touch undeclared keys on a single (non-cluster) node.
    store = RedisStore(redis)
    store.writer.apply(collection, "t", 0, [appended(0, "r1", 2), appended(1, "r2", 3)])
    index = CollectionKeys(collection).index
    assert redis.scard(index("replica_id", "r1")) == 2
    assert len(store.snapshot(collection, eq("replica_id", "r2")).rows) == 3
    store.writer.apply(collection, "t", 0, [DeleteOp(2, ["replica_id:r2"], None)])
    assert redis.exists(index("replica_id", "r2")) == 0
    assert set(store.snapshot(collection).rows) == {("r1", 0), ("r1", 1)}


def test_the_functions_commands(
    redis: redis_lib.Redis,
    module_redis: OwnService,
    collection: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CM_REDIS_URL", module_redis.address)
    redis.function_load(FIRST_LIBRARY, replace=True)
    assert main(["functions", "load"]) == 0
    assert capsys.readouterr().out == f"loaded {library_name()}\n"
    assert main(["functions", "list", "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["layout"] == LAYOUT
    mine = {"name": library_name(), "primaries": 1, "user": None, "current": True}
    assert mine in listed["libraries"]
    assert main(["functions", "remove", "cm", "--yes"]) == 0
    assert capsys.readouterr().out == "removed cm\n"
    assert "cm" not in names(redis)
    assert main(["functions", "remove", "nosuch", "--yes"]) == 1
    assert capsys.readouterr().err.startswith("error: 'nosuch' is no library of the store")
