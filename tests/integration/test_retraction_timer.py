"""The driver's retraction timer on real Redis, with a clock the test moves."""

from __future__ import annotations

import dataclasses

import pytest
import redis as redis_lib

from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from spark_consumers.row_ttl.retraction_timer import RetractionTimer
from tests.model.model import ModelStore


def test_timer_retracts_on_time_and_rebuilds_at_the_expiration(
    redis: redis_lib.Redis, frontiers_spec: CollectionSpec
) -> None:
    spec = frontiers_spec
    store, model, now = RedisStore(redis), ModelStore([spec]), [0]
    appends = [
        Append(spec.name, "r1", 1, ((("r1", "a", w, None), 1),), 0, valid_until=valid_until)
        for w, valid_until in enumerate((100, 200, 5_000))
    ]
    store.apply_requests("t", 0, list(enumerate(appends)))
    model.apply_all(appends, grouped=True)
    timer = RetractionTimer(store, expiration_offset_ms=150, topic="t", clock=lambda: now[0])
    timer.start()
    assert (timer.expiration, store.scheduled(spec.name)) == (150, 1)  # only the 100 one

    for moment, retracted, expiration, scheduled in (
        (120, 1, 150, 0),  # row 0 due
        (160, 0, 310, 1),  # the expiration reached: rebuilt for 310, now holding 200
        (250, 1, 310, 0),  # row 1 due
        (400, 0, 550, 0),  # rebuilt again; 5000 stays in the ledger only
    ):
        now[0] = moment
        assert timer.tick() == retracted
        model.retract_due(moment)
        assert (timer.expiration, store.scheduled(spec.name)) == (expiration, scheduled)
        assert store.snapshot(spec.name).rows == model.collection(spec.name).snapshot()[0]
    assert store.snapshot(spec.name).rows == {("r1", "a", 2, None): 1}


def test_a_collection_dropped_between_the_listing_and_its_schedule_is_passed_over(
    redis: redis_lib.Redis, frontiers_spec: CollectionSpec, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A consumer starting (or ticking) beside a drop, another test's in a parallel run,
    once exited: the timer listed the collection, then its schedule was gone."""
    spec = frontiers_spec
    store = RedisStore(redis)
    dropped = dataclasses.replace(spec, name=f"dropped-{spec.name}")
    store.create_collection(dropped)
    for offset, name in enumerate((spec.name, dropped.name)):
        store.apply_requests("t", 0, [(offset, Append(name, "r1", 1, (), 0))])
    written_from = store.writer.written_from

    def written_then_dropped(name: str, topic: str) -> bool:
        written = written_from(name, topic)
        if name == dropped.name:
            store.drop_collection(name)  # listed and written from the topic, then gone
        return written

    monkeypatch.setattr(store.writer, "written_from", written_then_dropped)
    timer = RetractionTimer(store, 0, "t")
    timer.start()
    assert timer.prepared == {spec.name}


def test_a_collection_no_request_of_the_topic_wrote_is_left_to_its_own_consumer(
    redis: redis_lib.Redis, frontiers_spec: CollectionSpec, unique: str
) -> None:
    """Another deployment's rows on the same Redis expire by their consumer's clock only:
    this timer must neither rebuild their schedule nor retract them."""
    spec = frontiers_spec
    store, ours = RedisStore(redis), dataclasses.replace(spec, name=f"ours-{unique}")
    store.create_collection(ours)
    try:
        for name, topic in ((spec.name, f"theirs-{unique}"), (ours.name, f"ours-{unique}")):
            row = (("r1", "a", 0, None), 1)
            store.apply_requests(topic, 0, [(0, Append(name, "r1", 1, (row,), 0, valid_until=5))])
        timer = RetractionTimer(store, 0, f"ours-{unique}", clock=lambda: 10)
        timer.start()
        assert timer.tick() == 1
        assert timer.prepared == {ours.name}
        assert store.snapshot(ours.name).rows == {}
        assert store.snapshot(spec.name).rows == {("r1", "a", 0, None): 1}
    finally:
        store.drop_collection(ours.name)
