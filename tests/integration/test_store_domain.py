"""The store at and past the edges of the numeric domain, held to the model after every step.

Requests are drawn across the whole domain and past it: diffs and long values at
±(2^53 - 1), one past it and at the 64-bit edges, -0.0 and 0.0, strings in code point
order, oversized ``in`` lists, names and epochs outside their rules, valid_until at its
edges. Each request first goes through the consumer's validation: one that fails it is a
dead letter and never reaches the store. The rest are applied in groups, each group twice
(a replayed batch), by a new store object each time (a restarted consumer), and the store
must equal the model after every step: equal contents, counters and change log; appends
that would leave the domain refused whole, each recorded once.
"""

from __future__ import annotations

import dataclasses
import uuid

import pytest
import redis as redis_lib
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.filters import MAX_VALUES, Cmp, Filter, In
from collection_manager.core.numbers import INT_LIMIT
from collection_manager.core.requests import Append, Delete, Fence, Request, validate_request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.store import RedisStore
from tests.integration.test_store_model import _assert_agrees
from tests.model.model import ModelStore

EDGES = (INT_LIMIT, INT_LIMIT - 1, -INT_LIMIT, 1, -1, 2)
PAST = (INT_LIMIT + 1, -(INT_LIMIT + 1), 2**63 - 1, -(2**63))
ROWS_SCHEMA = {
    "type": "record",
    "name": "edges",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "key", "type": "long"},
        {"name": "label", "type": "string"},
        {"name": "load", "type": "double"},
    ],
}
SPEC = CollectionSpec("edges", ROWS_SCHEMA, ("replica_id", "key"))

# Mostly valid values, so that most requests reach the store and some overflow there.
diffs = st.sampled_from(EDGES) | st.sampled_from(EDGES) | st.sampled_from(PAST) | st.integers(-3, 3)
keys = st.sampled_from((INT_LIMIT, INT_LIMIT - 1, -INT_LIMIT, 0, 0, 1)) | st.sampled_from(PAST)
labels = st.sampled_from(("z", "é", "ä", "Z", "", "a\u0301"))
loads = st.sampled_from((0.0, -0.0, 1.5, 2))
replicas = st.sampled_from(("r1", "r1", "r2", "r*"))
epochs = st.sampled_from((1, 1, 2, 2, 0, -1))
rows = st.tuples(replicas, keys, labels, loads)


def _appends(collection: str) -> st.SearchStrategy[Append]:
    updates = st.lists(st.tuples(rows, diffs), min_size=1, max_size=2).map(tuple)
    # Far in the future: no retraction timer on the same Redis ever finds them due.
    valid_until = st.none() | st.sampled_from((INT_LIMIT, 2**52, INT_LIMIT + 1))
    return st.builds(
        Append, st.just(collection), replicas, epochs, updates, st.just(0), valid_until
    )


def _filters() -> st.SearchStrategy[Filter]:
    compare = st.builds(Cmp, st.sampled_from(("eq", "lt", "ge")), st.just("label"), labels)
    by_key = st.builds(Cmp, st.sampled_from(("eq", "gt")), st.just("key"), keys)
    huge = st.just(In("key", tuple(range(MAX_VALUES + 1))))
    return compare | by_key | huge | st.builds(In, st.just("key"), st.lists(keys, max_size=3))


def _deletes(collection: str) -> st.SearchStrategy[Delete]:
    fence = st.none() | st.builds(Fence, replicas, epochs)
    return st.builds(Delete, st.just(collection), _filters(), st.just(""), fence)


def _streams(collection: str) -> st.SearchStrategy[list[Request]]:
    request = st.one_of(_appends(collection), _appends(collection), _deletes(collection))
    return st.lists(request, min_size=4, max_size=24)


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), cuts=st.lists(st.integers(1, 6), min_size=1, max_size=10))
def test_requests_across_the_domain_and_past_it_match_the_model(
    redis: redis_lib.Redis, data: st.DataObject, cuts: list[int]
) -> None:
    spec = dataclasses.replace(SPEC, name=f"edges-{uuid.uuid4().hex[:8]}")
    RedisStore(redis).create_collection(spec)
    stream = data.draw(_streams(spec.name))
    model, dead = ModelStore([spec]), 0
    try:
        valid: list[tuple[int, Request]] = []
        for offset, request in enumerate(stream):
            try:  # the consumer's validation: what fails it is a dead letter
                validate_request(request, {spec.name: spec})
            except CollectionManagerError:
                dead += 1
                continue
            valid.append((offset, request))
        start, sizes = 0, iter(cuts * len(valid))
        while start < len(valid):
            group = valid[start : start + next(sizes)]
            if data.draw(st.booleans(), label="forget the bound"):
                # As in a collection written before the bound existed: unknown until empty.
                redis.delete(CollectionKeys(spec.name).bound)
            for _ in range(2):  # the second run is a replay, by a restarted consumer
                RedisStore(redis, chunk_updates=3, delete_step_rows=2).apply_requests(
                    "t", 0, group, validated=True
                )
            model.apply_all([request for _, request in group], grouped=True)
            _assert_agrees(RedisStore(redis), spec.name, model.collection(spec.name))
            _assert_bound_holds(redis, spec.name)
            start += len(group)
        refused = RedisStore(redis).writer.take_refused(spec.name)
        assert len(refused) == model.collection(spec.name).counters.refused
        event(f"appends refused: {'some' if refused else 'none'}; dead letters: {dead > 0}")
        assert all("outside the supported integer range" in why for why in refused.values())
        assert dead + len(valid) == len(stream)
    finally:
        RedisStore(redis).drop_collection(spec.name)


def _assert_bound_holds(redis: redis_lib.Redis, collection: str) -> None:
    """The stored bound, where there is one, is at least every row's |multiplicity|."""
    keys = CollectionKeys(collection)
    bound = redis.get(keys.bound)
    if bound is not None:
        assert all(abs(int(m)) <= int(bound) for m in redis.hvals(keys.contents))


@pytest.fixture
def store(redis: redis_lib.Redis) -> RedisStore:
    made = RedisStore(redis)
    made.create_collection(SPEC)
    return made


def _append(*updates: tuple[tuple[object, ...], int], valid_until: int | None = None) -> Append:
    return Append(SPEC.name, "r1", 1, updates, 0, valid_until)  # type: ignore[arg-type]


def test_an_append_that_would_overflow_is_refused_whole_and_once(store: RedisStore) -> None:
    a, b = ("r1", 1, "a", 0.0), ("r1", 2, "b", 0.0)
    requests = [
        (0, _append((a, INT_LIMIT))),
        (1, _append((a, 1), (b, 1))),  # a would reach 2^53: refused, b with it
        (2, _append((b, 1))),
    ]
    try:
        for _ in range(2):  # and once more, as a replay
            counts = store.apply_requests("t", 5, requests, validated=True)
        assert store.snapshot(SPEC.name).rows == {a: INT_LIMIT, b: 1}
        assert store.stats(SPEC.name)["refused"] == 1
        assert counts == {}  # the replay found everything applied: nothing refused again
        [(field, why)] = store.writer.take_refused(SPEC.name).items()
        assert field == "t:5:1"
        assert "to 9007199254740992, outside the supported integer range" in why
    finally:
        store.drop_collection(SPEC.name)


def test_numbers_stay_exact_in_contents_index_and_ledger(store: RedisStore) -> None:
    big, near = ("r1", INT_LIMIT, "x", -0.0), ("r1", INT_LIMIT - 1, "x", 0.0)
    requests = [
        (0, _append((big, INT_LIMIT), (near, 1), valid_until=INT_LIMIT - 5)),
        (1, _append((big, -(INT_LIMIT - 1)), ((*near[:3], -0.0), 1))),
    ]
    try:
        store.apply_requests("t", 0, requests, validated=True)
        # 2^53 - 1 and 2^53 - 2 are two index entries; -0.0 and 0.0 are one value.
        assert store.snapshot(SPEC.name).rows == {("r1", INT_LIMIT, "x", 0.0): 1, near: 2}
        only = store.snapshot(SPEC.name, Cmp("eq", "key", INT_LIMIT - 1)).rows
        assert only == {near: 2}
        # The ledger kept INT_LIMIT exactly: retracting it at valid_until leaves 1 - INT_LIMIT.
        store.retract_due(SPEC.name, INT_LIMIT - 5)
        assert store.snapshot(SPEC.name).rows == {
            ("r1", INT_LIMIT, "x", 0.0): 1 - INT_LIMIT,
            near: 1,
        }
    finally:
        store.drop_collection(SPEC.name)


def test_strings_compare_by_code_point(store: RedisStore) -> None:
    labels = ["Z", "a", "z", "ä", "é"]  # code point order, whatever the locale
    requests = [(i, _append((("r1", i, label, 0.0), 1))) for i, label in enumerate(labels)]
    try:
        store.apply_requests("t", 0, requests, validated=True)
        below = store.snapshot(SPEC.name, Cmp("lt", "label", "ä")).rows
        assert sorted(row[2] for row in below) == ["Z", "a", "z"]
    finally:
        store.drop_collection(SPEC.name)
