"""A bucketed collection read at any consistent cut equals the unbucketed model
(docs/concepts/buckets.md).

Random histories of requests to one collection (appends of one replica, appends spanning
replicas, deletes by any filter, fenced removals, rows with a TTL and timer ticks) are
routed as writers route them (``core/routing.py``). Each bucket applies its own requests in
order, as its partition's applier would, and the buckets advance in a random interleaving.
After every step a reader computes the cut (``core/cut.py``) from what the buckets
recorded, reads each bucket at its time in the cut, and must find exactly what the
unbucketed model holds after the requests the cut includes, in their original order: every
group whole or not at all, cuts that never go back, and the same cut whether the reader
sees every part or only those after a settled cut.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import (
    BucketView,
    Cut,
    Part,
    consistent_cut,
    given_up,
    held_since,
    incomplete,
)
from collection_manager.core.filters import Cmp
from collection_manager.core.requests import Append, Delete, Fence, Request
from collection_manager.core.routing import route_append, route_delete
from collection_manager.core.specs import CollectionSpec, Row
from tests.model.model import CollectionModel
from tests.unit.strategies import EPOCHS, FRONTIERS, REPLICAS, model_rows, valid_filters

BUCKETS = 3
BY_REPLICA = dataclasses.replace(FRONTIERS, buckets=BUCKETS)
BY_WORKER = dataclasses.replace(FRONTIERS, buckets=BUCKETS, bucket_column="worker_id")
# Writes rows of any replica; never fenced (a replica's own agent writes only its rows).
RAW_WRITER = "raw-writer"
TTL_MS = 25


@dataclasses.dataclass(frozen=True)
class Tick:
    """The consumer's timer at ``clock`` (ms): each bucket retracts what is due on its own."""

    clock: int


Event = Append | Delete | Tick


def _events(spec: CollectionSpec) -> st.SearchStrategy[list[Event]]:
    update = st.integers(-1, 2)
    own = st.sampled_from(REPLICAS).flatmap(
        lambda r: st.builds(
            Append,
            st.just(spec.name),
            st.just(r),
            st.sampled_from(EPOCHS),
            st.lists(st.tuples(model_rows(spec, r), update), min_size=1, max_size=4).map(tuple),
            st.just(0),
            st.none(),
            st.none() | st.just(TTL_MS),
        )
    )
    rows_of_any = st.sampled_from(REPLICAS).flatmap(lambda r: model_rows(spec, r))
    spanning = st.builds(
        Append,
        st.just(spec.name),
        st.just(RAW_WRITER),
        st.just(1),
        st.lists(st.tuples(rows_of_any, update), min_size=2, max_size=6).map(tuple),
        st.just(0),
    )
    removal = st.builds(Fence, st.sampled_from(REPLICAS), st.sampled_from(EPOCHS)).map(
        lambda f: Delete(spec.name, Cmp("eq", "replica_id", f.replica_id), "removal", f)
    )
    delete = st.builds(Delete, st.just(spec.name), valid_filters(spec))
    tick = st.integers(0, 60).map(Tick)
    event = st.one_of(own, own, spanning, removal, delete, tick)
    return st.lists(event, min_size=1, max_size=25)


@dataclasses.dataclass
class Bucket:
    """One bucket's applier: its model, its requests in order, what it recorded."""

    model: CollectionModel
    queue: list[tuple[int, Append | Delete | Tick]]
    next: int = 0
    # (time, rows) after each applied request: the bucket at every time it had.
    history: list[tuple[int, dict[Row, int]]] = dataclasses.field(default_factory=list)
    parts: list[Part] = dataclasses.field(default_factory=list)
    # event index -> the bucket's time once that event's part was applied
    applied_at: dict[int, int] = dataclasses.field(default_factory=dict)

    def step(self, now_ms: int) -> None:
        index, request = self.queue[self.next]
        self.next += 1
        if isinstance(request, Tick):
            self.model.retract_due(request.clock)
        elif isinstance(request, Append):
            self.model.append(request, now_ms)
        else:
            self.model.delete(request)
        time = self.model.latest_time
        self.applied_at[index] = time
        self.history.append((time, self.model.state.rows()))
        part = request.bucket if isinstance(request, Append | Delete) else None
        if part is not None and part.group is not None:
            self.parts.append(Part(part.group, part.parts, time, now_ms))

    def rows_at(self, time: int) -> dict[Row, int]:
        rows: dict[Row, int] = {}
        for at, state in self.history:
            if at <= time:
                rows = state
        return rows

    def view(self, floor: int) -> BucketView:
        return BucketView(self.model.latest_time, tuple(p for p in self.parts if p.time > floor))


def _route(spec: CollectionSpec, events: Sequence[Event]) -> list[Bucket]:
    buckets = [Bucket(CollectionModel(spec.unit(b)), []) for b in range(spec.buckets)]
    for index, event in enumerate(events):
        if isinstance(event, Tick):
            for bucket in buckets:
                bucket.queue.append((index, event))
            continue
        routed: Sequence[Request] = (
            route_append(event, spec) if isinstance(event, Append) else route_delete(event, spec)
        )
        for request in routed:
            assert isinstance(request, Append | Delete) and request.bucket is not None
            buckets[request.bucket.bucket].queue.append((index, request))
    return buckets


def _now(index: int) -> int:
    return 10 * index  # the consumer's clock when it applies event `index`'s parts


def _in_bucket(position: int, bucket: int) -> Callable[[Row], bool]:
    return lambda row: bucket_of(row[position], BUCKETS) == bucket


def _expected(
    spec: CollectionSpec, events: Sequence[Event], buckets: list[Bucket], cut: Cut
) -> dict[Row, int]:
    """The unbucketed model after the events (or, for ticks, the buckets' parts of them)
    the cut includes, in their original order."""
    whole = dataclasses.replace(spec, buckets=1)
    model = CollectionModel(whole)
    position = spec.bucket_position
    for index, event in enumerate(events):
        inside = [
            b for b, bucket in enumerate(buckets)
            if index in bucket.applied_at and bucket.applied_at[index] <= cut.times[b]
        ]  # fmt: skip
        if isinstance(event, Tick):
            for b in inside:
                model.retract_due(event.clock, only=_in_bucket(position, b))
            continue
        holding = [
            b for b, bucket in enumerate(buckets) if any(i == index for i, _ in bucket.queue)
        ]
        # A group is whole or absent in a consistent cut.
        assert not inside or sorted(inside) == sorted(holding), (index, inside, holding)
        if not inside:
            continue
        if isinstance(event, Append):
            model.append(event, _now(index))
        else:
            model.delete(event)
    return model.state.rows()


def _read(buckets: list[Bucket], cut: Cut) -> dict[Row, int]:
    rows: dict[Row, int] = {}
    for bucket, time in zip(buckets, cut.times, strict=True):
        rows.update(bucket.rows_at(time))
    return rows


@settings(max_examples=300, deadline=None)
@given(
    data=st.data(),
    spec=st.sampled_from([BY_REPLICA, BY_WORKER]),
)
def test_every_cut_reads_what_the_unbucketed_model_holds(
    data: st.DataObject, spec: CollectionSpec
) -> None:
    events = data.draw(_events(spec))
    buckets = _route(spec, events)
    settled = (0,) * BUCKETS
    last = Cut(settled)
    order = data.draw(st.lists(st.integers(0, BUCKETS - 1), max_size=200))
    for choice in [*order, *[b for b in range(BUCKETS) for _ in buckets[b].queue]]:
        bucket = buckets[choice]
        if bucket.next < len(bucket.queue):
            bucket.step(_now(bucket.queue[bucket.next][0]))
        cut = consistent_cut([b.view(0) for b in buckets])
        # A reader that sees only the parts after the settled cut finds the same cut.
        assert consistent_cut([b.view(f) for b, f in zip(buckets, settled, strict=True)]) == cut
        assert all(a >= b for a, b in zip(cut.times, last.times, strict=True)), (cut, last)
        assert _read(buckets, cut) == _expected(spec, events, buckets, cut)
        # How long the cut trails: from when the oldest change it holds back was applied.
        held = [
            _now(index)
            for bucket, at in zip(buckets, cut.times, strict=True)
            for index, time in bucket.applied_at.items()
            if time > at
        ]
        views = [b.view(f) for b, f in zip(buckets, settled, strict=True)]
        assert held_since(views, cut) == min(held, default=None)
        if data.draw(st.booleans(), label="settle"):
            settled = cut.times
        last = cut
    # Once every bucket applied everything, the cut is the latest of each.
    assert last.times == tuple(b.model.latest_time for b in buckets)


def test_a_group_missing_a_part_holds_the_cut_until_it_is_given_up() -> None:
    views = [
        BucketView(5, (Part("g", 2, 4, applied_ms=1_000),)),
        BucketView(7, ()),
    ]
    assert consistent_cut(views).times == (3, 7)
    assert incomplete(views) == {"g": 1_000}
    # Its missing part could still come within the delivery timeout...
    assert given_up(incomplete(views), read_all_since_ms=1_000 + 300_000, delivery_ms=300_000) == []
    # ...and not after it: readers then see the part that came.
    late = given_up(incomplete(views), read_all_since_ms=1_000 + 300_001, delivery_ms=300_000)
    assert late == ["g"]
    assert consistent_cut(views, late).times == (5, 7)


def test_a_cut_trails_from_the_oldest_change_it_holds_back() -> None:
    views = [
        BucketView(6, (Part("g", 2, 4, applied_ms=1_000), Part("h", 2, 6, applied_ms=1_500))),
        BucketView(7, (Part("h", 2, 7, applied_ms=1_200),)),
    ]
    cut = consistent_cut(views)
    assert cut.times == (3, 6)  # g lacks a part; h is split by g's hold
    assert held_since(views, cut) == 1_000  # g's part, the first change bucket 0 holds back
    assert held_since(views, Cut((6, 6))) == 1_200
    assert held_since(views, Cut((6, 7))) is None  # at every bucket's time: nothing held
    assert held_since([BucketView(5), BucketView(2)], Cut((5, 2))) is None


def test_a_cut_prints_and_parses_as_its_times() -> None:
    cut = Cut((12, 40, 7))
    assert cut.text() == "12,40,7" and Cut.parse("12,40,7", 3) == cut and cut.total == 59
