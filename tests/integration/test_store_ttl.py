"""Row TTL in Redis equals the model over appends, re-appends, deletes, fences and clock moves.

Requests are applied in groups (merged as the consumer merges them), each group twice (a
replayed batch), at the test's clock; between groups the clock moves on and what is due
is retracted. After every step the store must equal the model: contents, time, change
log, counters, and each row's expiry (one entry per row).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from typing import Any

import pytest
import redis as redis_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collection_manager.core.requests import Append, Request
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.library import DUE, DUE_STEP_ROWS
from collection_manager.storage.store import RedisStore
from tests.integration.test_store_model import _assert_agrees, _renamed
from tests.model.model import ModelStore
from tests.unit.strategies import MODEL_SPECS, model_requests

# Far in the future (inside the numeric domain), so that a consumer's retraction timer on
# the same Redis, whose clock is the wall clock, never finds these rows due.
EPOCH = 4_000_000_000_000_000


def _with_ttl(request: Request, ttl_ms: int | None, valid_until: int | None) -> Request:
    if isinstance(request, Append):
        return dataclasses.replace(request, ttl_ms=ttl_ms, valid_until=valid_until)
    return request


requests = st.builds(
    _with_ttl,
    model_requests,
    st.sampled_from((None, 10, 10, 25)),
    st.sampled_from((None, None, EPOCH + 20)),
)
# A list of requests is one group applied at the current clock; a pair moves the clock on
# and applies what is due, with the TTL clock that far behind it (a consumer whose latest
# batch that read everything began earlier), or expiring no rows (None: one that is behind).
Tick = tuple[int, int | None]
ttl_lags = st.sampled_from((0, 0, 5, 20)) | st.none()
events = st.lists(
    st.lists(requests, min_size=1, max_size=6) | st.tuples(st.integers(1, 15), ttl_lags),
    min_size=4,
    max_size=25,
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=events)
def test_row_ttls_match_the_model(
    redis: redis_lib.Redis, events: list[list[Request] | Tick]
) -> None:
    store = RedisStore(redis, chunk_updates=3, delete_step_rows=2)
    suffix = uuid.uuid4().hex[:8]
    names = {spec.name: f"{spec.name}-{suffix}" for spec in MODEL_SPECS}
    specs = [dataclasses.replace(spec, name=names[spec.name]) for spec in MODEL_SPECS]
    model, now, offset = ModelStore(specs), EPOCH, 0
    for spec in specs:
        store.create_collection(spec)
    try:
        for event in events:
            if isinstance(event, tuple):
                step, lag = event
                now += step
                ttl_clock = 0 if lag is None else now - lag
                for spec in specs:
                    store.retract_due(spec.name, now, ttl_clock)
                model.retract_due(now, ttl_clock)
            else:
                group = [(offset + i, _renamed(r, names)) for i, r in enumerate(event)]
                offset += len(group)
                for _ in range(2):  # the second time is a replay: nothing changes
                    store.apply_requests("t", 0, group, now_ms=now)
                model.apply_all([r for _, r in group], grouped=True, now_ms=now)
            for spec in specs:
                collection = model.collection(spec.name)
                _assert_agrees(store, spec.name, collection)
                assert store.reader.expiries(spec.name) == collection.expiries
                assert redis.zcard(CollectionKeys(spec.name).expiries) == len(collection.expiries)
    finally:
        for spec in specs:
            store.drop_collection(spec.name)


def test_a_re_append_refreshes_and_reads_show_the_expiry(redis: redis_lib.Redis) -> None:
    spec = dataclasses.replace(MODEL_SPECS[0], name=f"ttl-{uuid.uuid4().hex[:8]}")
    store = RedisStore(redis)
    store.create_collection(spec)
    row, other = ("r1", "e", 1, 5), ("r1", "e", 2, None)
    try:
        store.apply_requests(
            "t",
            0,
            [(0, Append(spec.name, "r1", 1, ((row, 1), (other, 1)), 0, ttl_ms=100))],
            now_ms=EPOCH,
        )
        assert store.ttl_summary(spec.name) == (2, EPOCH + 100)
        # A zero diff names the row without changing it: its TTL starts again.
        refresh = Append(spec.name, "r1", 1, ((row, 0),), 0, ttl_ms=100)
        store.apply_requests("t", 0, [(1, refresh)], now_ms=EPOCH + 60)
        assert store.reader.expiries(spec.name, [row, other, ("r9", "x", 0, None)]) == {
            row: EPOCH + 160,
            other: EPOCH + 100,
        }
        store.retract_due(spec.name, EPOCH + 100, ttl_clock_ms=0)  # a consumer behind
        assert store.ttl_summary(spec.name) == (2, EPOCH + 100)
        store.retract_due(spec.name, EPOCH + 120, ttl_clock_ms=EPOCH + 99)  # its batch began
        assert store.ttl_summary(spec.name) == (2, EPOCH + 100)
        store.retract_due(spec.name, EPOCH + 100)
        assert store.snapshot(spec.name).rows == {row: 1}
        assert store.ttl_summary(spec.name) == (1, EPOCH + 160)
        store.retract_due(spec.name, EPOCH + 160)
        assert store.snapshot(spec.name).rows == {}
        assert store.ttl_summary(spec.name) == (0, None)
        assert store.stats(spec.name)["expirations"] == 2
    finally:
        store.drop_collection(spec.name)


def test_many_rows_due_at_once_go_in_bounded_calls_each_exactly_once(
    redis: redis_lib.Redis, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = dataclasses.replace(MODEL_SPECS[0], name=f"ttl-{uuid.uuid4().hex[:8]}")
    store = RedisStore(redis)
    store.create_collection(spec)
    # Two full calls of expiries, then a third with the last half call of them and the
    # scheduled retractions, which fit beside them.
    rows = [
        (("r1", "e", w, None), 1 + w % 2) for w in range(2 * DUE_STEP_ROWS + DUE_STEP_ROWS // 2)
    ]
    scheduled = [(("r2", "s", w, None), 1) for w in range(DUE_STEP_ROWS // 4)]
    calls: list[Any] = []
    real_call = store.writer._call
    monkeypatch.setattr(store.writer, "_call", lambda *a: calls.append(a[0]) or real_call(*a))
    try:
        store.apply_requests(
            "t",
            0,
            [
                (0, Append(spec.name, "r1", 1, tuple(rows), 0, ttl_ms=100)),
                (1, Append(spec.name, "r2", 1, tuple(scheduled), 0, valid_until=EPOCH + 50)),
            ],
            now_ms=EPOCH,
        )
        before = store.size(spec.name)[1]
        calls.clear()
        counters = store.retract_due(spec.name, EPOCH + 100)
        # Three calls of at most DUE_STEP_ROWS, each at its own time; then nothing is due.
        assert calls == [DUE] * 3
        assert store.size(spec.name) == (0, before + 3)
        assert counters["expirations"] == len(rows)
        assert counters["scheduled_retractions"] == len(scheduled)
        retracted: Counter[Any] = Counter()
        for entry in store.reader.tail(spec.name, since=before + 1):
            retracted[entry.row] += entry.diff
        assert retracted == {row: -n for row, n in rows + scheduled}
        store.retract_due(spec.name, EPOCH + 200)
        assert store.size(spec.name) == (0, before + 3)  # nothing due: no new time
    finally:
        store.drop_collection(spec.name)
