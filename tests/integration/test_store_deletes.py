"""Deletes too large for one function call: done in bounded steps, whole to every reader
(docs/concepts/deletes.md).

Each test loads three replicas' rows, applies a delete that needs many steps, and stops it
half done, as a consumer killed between two calls would leave it. Readers must see the
delete whole already (rows, time, change log); whatever writes next (an apply, the
retraction timer, a consumer starting) finishes it first; the end state equals the model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.filters import Filter, and_, eq, ge, in_, le
from collection_manager.core.requests import Append, Delete, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage import writes as store_module
from collection_manager.storage.client import redis_client
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.library import CONTINUE, call
from collection_manager.storage.ops import function_call
from collection_manager.storage.store import RedisStore
from tests.integration.own_services import OwnService
from tests.integration.test_store_model import _assert_agrees, _log
from tests.model.model import ModelStore

ROW_SCHEMA = {
    "type": "record",
    "name": "metrics",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "load", "type": "double"},
    ],
}
# More rows per replica than Redis keeps in a compact encoding (128), so that SSCAN and
# HSCAN return about COUNT rows per call rather than a whole small set at once.
ROWS_PER_REPLICA = 300
STEP_ROWS = 40

# The deletes: through one index set, several (an `in`), and a scan (no index on load).
DELETES: dict[str, Filter] = {
    "index": and_(eq("replica_id", "r2"), ge("worker_id", 10)),
    "in": in_("replica_id", ("r1", "r3", "nobody")),
    "scan": le("load", 150.0),
}


@dataclasses.dataclass
class Loaded:
    store: RedisStore
    spec: CollectionSpec
    model: ModelStore
    applied: list[tuple[int, Request]] = dataclasses.field(default_factory=list)

    def apply(self, *requests: Request) -> None:
        """Applies ``requests`` as one group, in the store and in the model."""
        group = list(enumerate(requests, start=len(self.applied)))
        self.store.apply_requests("t", 0, group)
        self.model.apply_all(list(requests), grouped=True)
        self.applied += group

    def replay(self) -> None:
        """Applies every request so far again, as a consumer replaying from the start."""
        self.store.apply_requests("t", 0, self.applied)

    def assert_agrees(self) -> None:
        _assert_agrees(self.store, self.spec.name, self.model.collection(self.spec.name))


def _load(redis: redis_lib.Redis, name: str) -> Loaded:
    spec = CollectionSpec(name, ROW_SCHEMA, ("replica_id",))
    store = RedisStore(redis, delete_step_rows=STEP_ROWS)
    store.create_collection(spec)
    handle = Loaded(store, spec, ModelStore([spec]))
    for replica in ("r1", "r2", "r3"):
        updates = tuple(((replica, w, float(w)), 1) for w in range(ROWS_PER_REPLICA))
        handle.apply(Append(spec.name, replica, 1, updates, 0))
    return handle


@pytest.fixture
def loaded(redis: redis_lib.Redis, unique: str) -> Iterator[Loaded]:
    handle = _load(redis, unique)
    yield handle
    handle.store.drop_collection(handle.spec.name)


def _steps(redis: redis_lib.Redis, spec: CollectionSpec, count: int) -> list[str]:
    """Runs ``count`` steps of the delete in progress; each step's state ('more', 'done')."""
    keys = CollectionKeys(spec.name)
    payload = function_call([], spec).payload
    args = [keys.index_prefix, 1_000_000, payload, STEP_ROWS]
    return [call(redis, CONTINUE, keys.function_keys(), args)[0].decode() for _ in range(count)]


def _leave_half_done(loaded: Loaded, where: Filter, monkeypatch: Any) -> None:
    """Applies a delete of ``where`` and stops it after two steps (a consumer killed)."""
    with monkeypatch.context() as patched:
        patched.setattr(loaded.store.writer, "_finish_delete", lambda spec: {})
        loaded.apply(Delete(loaded.spec.name, where))
    assert _steps(loaded.store._client, loaded.spec, 2) == ["more", "more"]


def _finish_by(how: str, loaded: Loaded, redis: redis_lib.Redis) -> None:
    if how == "next write":
        loaded.apply(Append(loaded.spec.name, "r4", 1, ((("r4", 1, 1.0), 1),), 0))
    elif how == "retraction timer":
        RedisStore(redis).retract_due(loaded.spec.name, 0)
    else:  # a consumer starting
        RedisStore(redis).finish_deletes()


@pytest.mark.parametrize("how", ["next write", "retraction timer", "consumer start"])
@pytest.mark.parametrize("delete", DELETES)
def test_a_half_done_delete_is_whole_to_readers_and_finished_by_the_next_writer(
    loaded: Loaded, redis: redis_lib.Redis, delete: str, how: str, monkeypatch: Any
) -> None:
    before = [(e.time, e.row, e.diff) for e in loaded.store.reader.tail(loaded.spec.name)]
    _leave_half_done(loaded, DELETES[delete], monkeypatch)
    model = loaded.model.collection(loaded.spec.name)
    rows, time = model.snapshot()
    assert any(row[0] == "r2" for row in rows) and len(rows) < 3 * ROWS_PER_REPLICA

    # Readers see the delete whole: its rows gone, at its time; the change log not yet.
    snapshot = loaded.store.snapshot(loaded.spec.name)
    assert (snapshot.rows, snapshot.as_of) == (rows, time)
    for replica in ("r1", "r2", "r3"):
        filtered = loaded.store.snapshot(loaded.spec.name, eq("replica_id", replica))
        assert filtered.rows == {r: m for r, m in rows.items() if r[0] == replica}
        assert filtered.as_of == time
    tail = [(e.time, e.row, e.diff) for e in loaded.store.reader.tail(loaded.spec.name)]
    assert _log(tail) == _log(before)

    _finish_by(how, loaded, redis)
    assert not redis.exists(CollectionKeys(loaded.spec.name).pending)
    loaded.assert_agrees()
    loaded.replay()  # applies nothing twice
    loaded.assert_agrees()


@pytest.mark.parametrize("delete", DELETES)
def test_a_half_done_delete_is_finished_whole_after_redis_restarts(
    own_service: Callable[[str], OwnService], unique: str, delete: str, monkeypatch: Any
) -> None:
    """A restarted Redis hashes with another seed (so does the node a slot moves to): the
    SCAN cursor a step left points elsewhere in the new table. Going on from it would miss
    rows; the delete must notice and scan again from the start."""
    server = own_service("redis")
    loaded = _load(redis_client(server.address), unique)
    _leave_half_done(loaded, DELETES[delete], monkeypatch)
    server.sigkill_and_restart(down_s=0.1)
    loaded.store = RedisStore(redis_client(server.address), delete_step_rows=STEP_ROWS)
    loaded.store.finish_deletes()
    loaded.assert_agrees()
    loaded.replay()  # applies nothing twice
    loaded.assert_agrees()


@pytest.mark.parametrize("delete", DELETES)
def test_each_step_looks_at_about_its_bound_of_rows(
    loaded: Loaded, delete: str, monkeypatch: Any
) -> None:
    retracted: list[int] = []

    def counting(client: Any, function: str, keys: Any, args: Any, **kw: Any) -> Any:
        reply = call(client, function, keys, args, **kw)
        if function == CONTINUE:
            counters = dict(zip(reply[1::2], reply[2::2], strict=True))
            retracted.append(int(counters[b"retractions"]))
        return reply

    monkeypatch.setattr(store_module, "call", counting)
    loaded.apply(Delete(loaded.spec.name, DELETES[delete]))
    loaded.assert_agrees()
    total = sum(retracted)
    assert total == loaded.store.stats(loaded.spec.name)["retractions"] > 2 * STEP_ROWS
    # SCAN's COUNT is a hint: a call may return a few more than asked (one hash bucket).
    assert max(retracted) <= 2 * STEP_ROWS
    assert len(retracted) >= total // (2 * STEP_ROWS)
