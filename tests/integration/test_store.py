"""The Redis store on a real Redis: atomic, exactly-once, indexed deletes, consistent reads."""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
import redis as redis_lib

from collection_manager.core.errors import FilterError, SchemaError, UnknownCollectionError
from collection_manager.core.filters import and_, eq, ge, in_, prefix
from collection_manager.core.planning import SourceUpdates
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.errors import WatermarkMovedError
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.ops import AppendOp, DeleteOp
from collection_manager.storage.store import RedisStore, Snapshot

ROW_SCHEMA = {
    "type": "record",
    "name": "metrics",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "cpu", "type": ["null", "double"]},
    ],
}


def append(
    first: int, last: int, replica: str, epoch: int, updates: list[tuple[tuple[object, ...], int]]
) -> AppendOp:
    part = SourceUpdates(replica, epoch, None, None, tuple(updates), last - first + 1)
    return AppendOp(first, last, [part])


@pytest.fixture(scope="module")
def redis(module_redis_client: redis_lib.Redis) -> redis_lib.Redis:
    """A Redis of this module's own: ``test_indexed_delete_touches_only_matching_rows``
    counts the server's commands, and other tests' consumers beside it list catalogs and
    watermarks (HKEYS) all the time."""
    return module_redis_client


@pytest.fixture
def store(redis: redis_lib.Redis) -> RedisStore:
    return RedisStore(redis, chunk_updates=50)


@pytest.fixture
def collection(store: RedisStore, unique: str) -> Iterator[str]:
    store.create_collection(CollectionSpec(unique, ROW_SCHEMA, ("replica_id",)))
    yield unique
    store.drop_collection(unique)


def rows_of(replica: str, n: int, cpu: float = 0.5) -> list[tuple[tuple[object, ...], int]]:
    return [((replica, worker, cpu), 1) for worker in range(n)]


def command_calls(redis: redis_lib.Redis) -> dict[str, int]:
    return {name: stats["calls"] for name, stats in redis.info("commandstats").items()}


def test_unknown_collection_is_named(store: RedisStore) -> None:
    with pytest.raises(UnknownCollectionError, match="unknown collection 'nope'"):
        store.snapshot("nope")


def test_appends_consolidate_and_zero_rows_vanish(store: RedisStore, collection: str) -> None:
    store.writer.apply(collection, "t", 0, [append(0, 0, "r1", 1, [(("r1", 1, 2), 3)])])
    store.writer.apply(collection, "t", 0, [append(1, 1, "r1", 1, [(("r1", 1, 2.0), -3)])])
    snap = store.snapshot(collection)
    assert snap.rows == {}
    assert snap.as_of == 2
    assert [(e.time, e.row, e.diff) for e in store.reader.tail(collection)] == [
        (1, ("r1", 1, 2.0), 3),
        (2, ("r1", 1, 2.0), -3),
    ]


def test_a_large_step_is_logged_in_entries_of_one_time(
    store: RedisStore, collection: str, redis: redis_lib.Redis
) -> None:
    updates = [(("r1", worker, 0.5), 1 + worker % 3) for worker in range(1_200)]
    store.writer.apply(collection, "t", 0, [append(0, 0, "r1", 1, updates)])
    store.writer.apply(collection, "t", 0, [append(1, 1, "r1", 1, [(("r1", 7, 0.5), -2)])])
    changes = [(e.time, e.row, e.diff) for e in store.reader.tail(collection)]
    assert changes == [(1, row, diff) for row, diff in updates] + [(2, ("r1", 7, 0.5), -2)]
    log = CollectionKeys(collection).log
    assert [entry_id for entry_id, _ in redis.xrange(log)] == [b"1-0", b"1-1", b"1-2", b"2-0"]
    assert [(e.time, e.row) for e in store.reader.tail(collection, since=2)] == [
        (2, ("r1", 7, 0.5))
    ]
    assert len(store.reader.tail(collection, limit=3)) == 3


def test_a_replayed_group_changes_nothing(
    store: RedisStore, collection: str, redis: redis_lib.Redis
) -> None:
    group = [
        append(0, 3, "r1", 1, rows_of("r1", 120)),
        DeleteOp(4, ["replica_id:r1"], ["lt", 1, 10], ("r1", 1)),
        append(5, 5, "r1", 1, rows_of("r1", 3, cpu=9.0)),
        append(6, 6, "r2", 1, rows_of("r2", 5)),
    ]
    first = store.writer.apply(collection, "t", 0, group)
    before = (store.snapshot(collection), store.reader.tail(collection), store.stats(collection))
    again = store.writer.apply(collection, "t", 0, group)
    after = (store.snapshot(collection), store.reader.tail(collection), store.stats(collection))
    assert first["requests"] == 7 and first["steps"] == 4  # the first op merges 4 appends
    assert first["fused_appends"] == 1
    assert again["requests"] == 0 and again["replays_skipped"] == 4
    assert after[:2] == before[:2]
    assert store.applied_offset(collection, "t", 0) == 6


def test_a_replay_that_straddles_the_watermark_is_refused(
    store: RedisStore, collection: str
) -> None:
    store.writer.apply(collection, "t", 0, [append(0, 5, "r1", 1, rows_of("r1", 2))])
    with pytest.raises(WatermarkMovedError, match="straddles the applied offset 5"):
        store.writer.apply(collection, "t", 0, [append(3, 8, "r1", 1, rows_of("r1", 2))])
    assert store.snapshot(collection).rows == dict(rows_of("r1", 2))


def test_a_second_applier_that_got_ahead_meanwhile_is_left_out_not_fatal(
    store: RedisStore, collection: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    requests = [(i, Append(collection, "r1", 1, (((("r1", i, 0.5)), 1),), 0)) for i in range(8)]
    # The other consumer applied offsets 0..4 after this one read the watermark (-1) and
    # merged 0..7 into one group.
    store.apply_requests("t", 0, requests[:5])
    stale, read = [-1], store.writer.applied_offset

    def applied_offset(*args: object) -> int:
        return stale.pop() if stale else read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(store.writer, "applied_offset", applied_offset)
    counts = store.apply_requests("t", 0, requests)
    assert counts[collection]["requests"] == 3  # only 5..7: nothing applied twice
    assert store.snapshot(collection).rows == {("r1", i, 0.5): 1 for i in range(8)}
    assert store.applied_offset(collection, "t", 0) == 7


@pytest.mark.parametrize("step_rows", [10_000, 100], ids=["one call", "in steps"])
def test_indexed_delete_touches_only_matching_rows(
    redis: redis_lib.Redis, collection: str, step_rows: int
) -> None:
    store = RedisStore(redis, delete_step_rows=step_rows)
    for i, replica in enumerate(["r1", "r2", "r3", "r4"]):
        store.writer.apply(collection, "t", 0, [append(i, i, replica, 1, rows_of(replica, 500))])
    before = command_calls(redis)
    counts = store.writer.apply(collection, "t", 0, [DeleteOp(9, ["replica_id:r2"], None)])
    after = command_calls(redis)
    calls = {name: after.get(name, 0) - before.get(name, 0) for name in after}
    assert counts["retractions"] == 500
    assert calls.get("cmdstat_hkeys", 0) == calls.get("cmdstat_hscan", 0) == 0  # no scan
    # The index set: read whole in one call, or by a cursor in steps of about step_rows.
    if step_rows > 500:
        assert (calls["cmdstat_smembers"], calls.get("cmdstat_sscan", 0)) == (1, 0)
    else:
        assert calls.get("cmdstat_smembers", 0) == 0 and calls["cmdstat_sscan"] >= 500 // 200
    # One read per matching row (none for the other 1500; a cursor may return a row
    # twice, read again and not retracted), plus the applied-offset watermark.
    assert 500 + 1 <= calls["cmdstat_hget"] <= (500 + 1) * (1 if step_rows > 500 else 2)
    remaining = store.snapshot(collection).rows
    assert len(remaining) == 1500 and all(row[0] != "r2" for row in remaining)


def test_scan_delete_and_filtered_snapshots_agree(store: RedisStore, collection: str) -> None:
    store.writer.apply(
        collection,
        "t",
        1,
        [append(0, 0, "r1", 1, rows_of("r1", 20)), append(1, 1, "r2", 1, rows_of("r2", 20))],
    )
    by_index = store.snapshot(collection, and_(eq("replica_id", "r2"), ge("worker_id", 15)))
    by_scan = store.snapshot(collection, and_(prefix("replica_id", "r2"), ge("worker_id", 15)))
    assert by_index == by_scan
    assert sorted(by_index.rows) == [("r2", w, 0.5) for w in range(15, 20)]
    store.writer.apply(
        collection, "t", 1, [DeleteOp(2, None, ["or", ["lt", 1, 5], ["is_null", 2]])]
    )
    assert sorted(store.snapshot(collection).rows) == sorted(
        [("r1", w, 0.5) for w in range(5, 20)] + [("r2", w, 0.5) for w in range(5, 20)]
    )


def test_an_invalid_read_filter_is_named(store: RedisStore, collection: str) -> None:
    with pytest.raises(FilterError, match="nope"):
        store.snapshot(collection, eq("nope", 1))
    with pytest.raises(FilterError, match="worker_id"):
        store.snapshot(collection, in_("worker_id", ["x"]))


def test_a_concurrent_reader_never_sees_half_a_request(
    store: RedisStore, collection: str, redis: redis_lib.Redis
) -> None:
    # Request k replaces generation k-1 (400 rows) with generation k: any snapshot must
    # hold exactly one whole generation, whichever time it is at.
    size, generations = 400, 30
    done = threading.Event()
    seen: list[tuple[int, set[object], int]] = []

    def read() -> None:
        reader = RedisStore(redis_lib.Redis(connection_pool=redis.connection_pool))
        while not done.is_set():
            snap = reader.snapshot(collection)
            seen.append((snap.as_of, {row[2] for row in snap.rows}, len(snap.rows)))

    thread = threading.Thread(target=read)
    thread.start()
    try:
        for k in range(generations):
            updates = [(("r1", w, float(k)), 1) for w in range(size)]
            if k:
                updates += [(("r1", w, float(k - 1)), -1) for w in range(size)]
            store.writer.apply(collection, "t", 0, [append(k, k, "r1", 1, updates)])
    finally:
        done.set()
        thread.join()
    assert len(seen) > generations / 2
    for as_of, generation, count in seen:
        if as_of == 0:
            assert count == 0
        else:
            assert generation == {float(as_of - 1)} and count == size


def test_bad_requests_are_refused_whole_with_context(store: RedisStore, collection: str) -> None:
    good = Append(collection, "r1", 1, ((("r1", 1, 0.5), 1),), 0)
    bad_row = Append(collection, "r1", 1, ((("r1", "one", 0.5), 1),), 0)
    with pytest.raises(SchemaError, match="worker_id") as raised:
        store.apply_requests("t", 3, [(0, good), (1, bad_row)])
    assert (raised.value.topic, raised.value.partition, raised.value.offset) == ("t", 3, 1)
    with pytest.raises(FilterError, match="nope"):
        store.apply_requests("t", 3, [(0, good), (1, Delete(collection, eq("nope", 1)))])
    with pytest.raises(UnknownCollectionError, match="'other'"):
        store.apply_requests("t", 3, [(0, good), (1, Append("other", "r1", 1, (), 0))])
    assert store.snapshot(collection) == Snapshot({}, 0)  # nothing of the good one either
