"""Temporal validity in Redis: scheduled retractions equal the model, with or without an
expiration; with one, fewer future retractions are stored."""

from __future__ import annotations

import dataclasses
import uuid

import redis as redis_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collection_manager.core.requests import Append, Request
from collection_manager.storage.store import RedisStore
from tests.integration.test_store_model import _assert_agrees, _renamed
from tests.model.model import ModelStore
from tests.unit.strategies import MODEL_SPECS, model_requests

Tick = int  # the clock moves to this time (ms) and due retractions are applied
# The test's clock starts far in the future (year ~128,000; inside the numeric domain), so
# that a consumer's retraction timer on the same Redis, whose clock is the wall clock,
# never finds this test's retractions due.
EPOCH = 4_000_000_000_000_000
VALID_UNTIL = st.sampled_from((None, 10, 20, 30, 45, 60)).map(
    lambda v: None if v is None else EPOCH + v
)


def _with_validity(request: Request, valid_until: int | None) -> Request:
    if isinstance(request, Append):
        return dataclasses.replace(request, valid_until=valid_until)
    return request


events = st.lists(
    st.one_of(
        st.builds(_with_validity, model_requests, VALID_UNTIL),
        st.integers(1, 15).map(lambda step: -step),  # negative: advance the clock by it
    ),
    min_size=5,
    max_size=40,
)


@settings(
    max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=events, offset=st.sampled_from((None, 1, 12, 25, 100)))
def test_scheduled_retractions_match_the_model_with_and_without_expiration(
    redis: redis_lib.Redis, events: list[Request | int], offset: int | None
) -> None:
    store = RedisStore(redis)
    suffix = uuid.uuid4().hex[:8]
    names = {spec.name: f"{spec.name}-{suffix}" for spec in MODEL_SPECS}
    specs = [dataclasses.replace(spec, name=names[spec.name]) for spec in MODEL_SPECS]
    model, now, offset_s = ModelStore(specs), EPOCH, offset
    for spec in specs:
        store.create_collection(spec)
        store.set_expiration(spec.name, None if offset_s is None else now + offset_s)
    try:
        for offset_in_kafka, event in enumerate(events):
            if isinstance(event, int):
                now -= event
                for spec in specs:
                    expiration = redis.get(f"cm:{{{spec.name}}}:expiration")
                    if expiration is not None and now >= int(expiration):
                        # What the consumer does when its clock reaches the expiration.
                        store.set_expiration(spec.name, now + (offset_s or 0))
                    store.retract_due(spec.name, now)
                model.retract_due(now)
            else:
                request = _renamed(event, names)
                store.apply_requests("t", 0, [(offset_in_kafka, request)])
                model.apply_all([request], grouped=True)  # the store consolidates, too
            for spec in specs:
                collection = model.collection(spec.name)
                _assert_agrees(store, spec.name, collection)
                horizon = (
                    None
                    if offset_s is None
                    else int(redis.get(f"cm:{{{spec.name}}}:expiration") or 0)
                )
                assert store.scheduled(spec.name) == collection.validity.scheduled(horizon)
    finally:
        for spec in specs:
            store.drop_collection(spec.name)


def test_expiration_stores_fewer_future_retractions(redis: redis_lib.Redis) -> None:
    """Materialize's replica-expiration check, in days: validity 20 with offset 30 keeps
    every retraction; validity 30 with offset 20 keeps none; both read the same."""
    day = 86_400_000
    spec = dataclasses.replace(MODEL_SPECS[0], name=f"validity-{uuid.uuid4().hex[:8]}")
    store = RedisStore(redis)
    store.create_collection(spec)
    try:
        kept = {}
        cases = ((20, 30), (30, 20), (30, None))
        for offset, (validity_days, offset_days) in enumerate(cases):
            store.set_expiration(spec.name, None if offset_days is None else offset_days * day)
            rows = tuple((("r1", f"e{validity_days}-{offset_days}", i, None), 1) for i in range(3))
            append = Append(spec.name, "r1", 1, rows, 0, valid_until=validity_days * day)
            before = store.scheduled(spec.name)
            store.apply_requests("t", 0, [(offset, append)])
            kept[(validity_days, offset_days)] = store.scheduled(spec.name) - before
        assert kept == {(20, 30): 3, (30, 20): 0, (30, None): 3}
    finally:
        store.drop_collection(spec.name)
