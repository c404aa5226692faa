"""The Redis store agrees with the pure model (the oracle) after every request group."""

from __future__ import annotations

import dataclasses
import uuid
from collections import Counter
from collections.abc import Sequence

import redis as redis_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collection_manager.core.requests import Append, Delete, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.ops import indexed_positions
from collection_manager.storage.rows import decode_row, index_value
from collection_manager.storage.store import RedisStore
from tests.model.model import CollectionModel, ModelCounters, ModelStore
from tests.unit.strategies import MODEL_SPECS, model_streams

# The counters the model keeps (all but replays_skipped, which it never sees).
MODEL_COUNTERS = tuple(f.name for f in dataclasses.fields(ModelCounters))


def _renamed(request: Request, names: dict[str, str]) -> Request:
    if isinstance(request, Append | Delete):
        return dataclasses.replace(request, collection=names[request.collection])
    return request


def _log(entries: list[tuple[int, tuple[object, ...], int]]) -> Counter[tuple[object, ...]]:
    # Retractions of one delete have no defined order: compare each time's changes as a bag.
    return Counter((time, row, diff) for time, row, diff in entries)


def _assert_agrees(store: RedisStore, name: str, model: CollectionModel) -> None:
    snapshot = store.snapshot(name)
    rows, time = model.snapshot()
    assert snapshot.rows == rows
    assert snapshot.as_of == time
    assert store.reader.fences(name) == model.fences.as_dict()
    stats = store.stats(name)
    assert {c: stats.get(c, 0) for c in MODEL_COUNTERS} == {
        c: getattr(model.counters, c) for c in MODEL_COUNTERS
    }
    stored = [(e.time, e.row, e.diff) for e in store.reader.tail(name)]
    assert _log(stored) == _log([(e.time, e.row, e.diff) for e in model.log])


def _index_keys(spec: CollectionSpec, row: Sequence[object]) -> list[bytes]:
    prefix = CollectionKeys(spec.name).index_prefix
    values = [(column, index_value(row[position])) for column, position in indexed_positions(spec)]
    return [f"{prefix}{column}:{value}".encode() for column, value in values if value is not None]


def _assert_index_sets_are_the_rows(
    redis: redis_lib.Redis, spec: CollectionSpec, requests: Sequence[Request]
) -> None:
    """Each index set holds exactly the stored rows with its value, whether the library
    derived a row's keys itself or was given its part's shared ones. The sets looked at are
    those of every row the requests name (no SCAN of a Redis other tests share)."""
    expected: dict[bytes, set[bytes]] = {}
    for encoded in redis.hkeys(CollectionKeys(spec.name).contents):
        for key in _index_keys(spec, decode_row(encoded)):
            expected.setdefault(key, set()).add(encoded)
    named = {
        key
        for request in requests
        if isinstance(request, Append) and request.collection == spec.name
        for row, _ in request.updates
        for key in _index_keys(spec, row)
    }
    assert {key: members for key in named if (members := redis.smembers(key))} == expected


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(stream=model_streams, cuts=st.lists(st.integers(1, 12), min_size=1, max_size=40))
def test_random_streams_match_the_model_after_every_group(
    redis: redis_lib.Redis, stream: list[Request], cuts: list[int]
) -> None:
    # Small chunks and delete steps: groups and deletes span several calls.
    store = RedisStore(redis, chunk_updates=7, delete_step_rows=2)
    suffix = uuid.uuid4().hex[:8]
    names = {spec.name: f"{spec.name}-{suffix}" for spec in MODEL_SPECS}
    specs = [dataclasses.replace(spec, name=names[spec.name]) for spec in MODEL_SPECS]
    for spec in specs:
        store.create_collection(spec)
    model = ModelStore(specs)
    requests = [_renamed(r, names) for r in stream]
    try:
        start, sizes = 0, iter(cuts * len(requests))
        while start < len(requests):
            group = requests[start : start + next(sizes)]
            offsets = list(range(start, start + len(group)))
            store.apply_requests("t", 0, list(zip(offsets, group, strict=True)))
            model.apply_all(group, grouped=True)
            for spec in specs:
                _assert_agrees(store, spec.name, model.collection(spec.name))
            # A crash replay of the same group changes nothing.
            store.apply_requests("t", 0, list(zip(offsets, group, strict=True)))
            for spec in specs:
                _assert_agrees(store, spec.name, model.collection(spec.name))
                _assert_index_sets_are_the_rows(redis, spec, requests)
            start += len(group)
    finally:
        for spec in specs:
            store.drop_collection(spec.name)
