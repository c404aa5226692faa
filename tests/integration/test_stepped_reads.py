"""Reads in bounded steps on real Redis, while a writer changes the collection under them.

Each read chooses its time, then scans in small steps while another client appends,
retracts and deletes. What it returns must be the collection at its time exactly: the
change log replayed up to that time (filtered as the read is). Split reads (by hash, by
index set) must add up to the same.
"""

from __future__ import annotations

import random
import threading
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.core.filters import Filter, compile_filter, eq, ge, in_
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import SteppedReadError
from collection_manager.storage import step_reads
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.client import redis_client
from collection_manager.storage.step_reads import ReadPart, read_part, split
from collection_manager.storage.store import RedisStore
from tests.support import assert_eventually

ROW_SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "size", "type": "double"},
    ],
}
REPLICAS = ("r1", "r2", "r3", "r4")
WORKERS = 200  # rows per replica: past Redis's compact encodings, so scans take many steps


class Writer(threading.Thread):
    """Applies random appends, retractions and deletes until told to stop."""

    def __init__(self, url: str, spec: CollectionSpec) -> None:
        super().__init__(daemon=True)
        self.store = RedisStore(redis_client(url), delete_step_rows=40)
        self.spec = spec
        self.stop_now = threading.Event()
        self.writes = 0
        self.failure: BaseException | None = None
        self._offset = 1_000

    def run(self) -> None:
        chance = random.Random(7)
        try:
            while not self.stop_now.is_set():
                replica = chance.choice(REPLICAS)
                if chance.random() < 0.05:
                    request: Any = Delete(self.spec.name, eq("replica_id", replica))
                else:
                    updates = tuple(
                        ((replica, chance.randrange(WORKERS), 1.5), chance.choice((1, 1, -1)))
                        for _ in range(20)
                    )
                    request = Append(self.spec.name, replica, 1, updates, 0)
                self.store.apply_requests("t", 0, [(self._offset, request)])
                self._offset += 1
                self.writes += 1
        except BaseException as exc:  # reported by the test
            self.failure = exc


@pytest.fixture
def loaded(redis: redis_lib.Redis, unique: str) -> Iterator[tuple[RedisStore, CollectionSpec]]:
    spec = CollectionSpec(f"sizes-{unique}", ROW_SCHEMA, ("replica_id",))
    store = RedisStore(redis)
    store.create_collection(spec)
    for offset, replica in enumerate(REPLICAS):
        updates = tuple(((replica, w, float(w)), 1) for w in range(WORKERS))
        store.apply_requests("t", 0, [(offset, Append(spec.name, replica, 1, updates, 0))])
    yield store, spec
    store.drop_collection(spec.name)


def _at(
    store: RedisStore, spec: CollectionSpec, as_of: int, where: Filter | None
) -> dict[Row, int]:
    """The collection at ``as_of``: its change log replayed (the model of a read)."""
    rows: Counter[Row] = Counter()
    for entry in store.reader.tail(spec.name):
        if entry.time <= as_of:
            rows[entry.row] += entry.diff
    matches = compile_filter(where, spec.column_names) if where is not None else None
    return {r: n for r, n in rows.items() if n and (matches is None or matches(r))}


def _more(now: int, before: int) -> None:
    assert now > before, "nothing written yet"


@pytest.mark.parametrize(
    ("where", "parts"),
    [
        (None, 1),
        (None, 3),
        (in_("replica_id", ("r1", "r3")), 1),
        (ge("worker_id", 150), 2),
    ],
    ids=["scan", "scan-in-3-parts", "index-sets", "filtered-scan-in-2-parts"],
)
def test_a_stepped_read_is_the_collection_at_its_time_while_writes_go_on(
    loaded: tuple[RedisStore, CollectionSpec],
    endpoints: Any,
    monkeypatch: pytest.MonkeyPatch,
    where: Filter | None,
    parts: int,
) -> None:
    store, spec = loaded
    monkeypatch.setattr(step_reads, "STEP_ROWS", 25)
    writer = Writer(endpoints.redis_url, spec)
    writer.start()
    try:
        for _ in range(3):
            as_of = store.size(spec.name)[1]
            writes_before = writer.writes
            # At least one change after as_of, which the read must undo; more come during
            # it (a busy machine may hold the writer back, so the first is waited for).
            assert_eventually(lambda b=writes_before: _more(writer.writes, b), timeout=30)
            result: dict[Row, int] = {}
            for part in split(spec, where, parts):
                rows, _ = read_part(store._client, spec, part, as_of)
                assert not set(rows) & set(result), "two parts returned one row"
                result.update(rows)
            assert result == _at(store, spec, as_of, where)
    finally:
        writer.stop_now.set()
        writer.join(30)
    assert writer.failure is None


def test_pushed_down_index_sets_read_only_their_rows(
    loaded: tuple[RedisStore, CollectionSpec],
) -> None:
    store, spec = loaded
    as_of = store.size(spec.name)[1]
    [part] = split(spec, eq("replica_id", "r2"), 4)
    assert part == ReadPart(eq("replica_id", "r2"), ("replica_id:r2",))
    rows, read = read_part(store._client, spec, part, as_of)
    assert len(rows) == WORKERS and read == WORKERS
    whole, read_all = read_part(store._client, spec, ReadPart(), as_of)
    assert len(whole) == read_all == WORKERS * len(REPLICAS)


def test_a_read_older_than_the_trimmed_log_is_refused(redis: redis_lib.Redis, unique: str) -> None:
    store = RedisStore(redis, log_max_length=1)
    spec = CollectionSpec(f"trimmed-{unique}", ROW_SCHEMA, ("replica_id",))
    store.create_collection(spec)
    try:
        for offset in range(300):
            update = ((("r1", offset, 1.0), 1),)
            store.apply_requests("t", 0, [(offset, Append(spec.name, "r1", 1, update, 0))])
        # XADD MAXLEN ~ trims whole nodes (of up to 100 entries or 4 KB): where it stopped
        # depends on the entries' size, so the test reads it.
        trimmed = ChangeLog(redis, spec.name).trimmed_through()
        assert 0 < trimmed < 300
        with pytest.raises(SteppedReadError, match=f"trimmed through {trimmed}"):
            read_part(redis, spec, ReadPart(), trimmed - 1)
        rows, _ = read_part(redis, spec, ReadPart(), trimmed)  # time t holds t rows
        assert len(rows) == trimmed
    finally:
        store.drop_collection(spec.name)
