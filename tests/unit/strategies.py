"""Hypothesis strategies for rows, filters and requests.

Two flavours: *wire* strategies cover the whole value space (any text, any 64-bit int) to
test encoding; *model* strategies draw from tiny domains over two small collections, so
random streams often hit the same rows, replicas and epochs.
"""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from collection_manager.core.filters import (
    CMP_OPS,
    MAX_DEPTH,
    And,
    Cmp,
    Filter,
    In,
    IsNull,
    Not,
    Or,
    Prefix,
    shape,
)
from collection_manager.core.requests import (
    Append,
    Delete,
    Fence,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    Request,
)
from collection_manager.core.specs import LONG_MAX, LONG_MIN, CollectionSpec, Column, Value

# Wire strategies

longs = st.integers(min_value=LONG_MIN, max_value=LONG_MAX)
wire_values: st.SearchStrategy[Value] = st.one_of(
    st.none(),
    st.booleans(),
    longs,
    st.floats(allow_nan=False),
    st.text(max_size=8),
)
wire_rows = st.lists(wire_values, max_size=5).map(tuple)
names = st.text(min_size=1, max_size=6)


def _wire_leaf() -> st.SearchStrategy[Filter]:
    return st.one_of(
        st.builds(Cmp, st.sampled_from(CMP_OPS), names, wire_values),
        st.builds(In, names, st.lists(wire_values, max_size=3).map(tuple)),
        st.builds(Prefix, names, st.text(max_size=4)),
        st.builds(IsNull, names),
    )


def _wire_compound(children: st.SearchStrategy[Filter]) -> st.SearchStrategy[Filter]:
    terms = st.lists(children, max_size=3).map(tuple)
    return st.one_of(st.builds(And, terms), st.builds(Or, terms), st.builds(Not, children))


wire_filters: st.SearchStrategy[Filter] = st.recursive(
    _wire_leaf(), _wire_compound, max_leaves=12
).filter(lambda f: shape(f)[0] <= MAX_DEPTH)

appends = st.builds(
    Append,
    collection=names,
    replica_id=names,
    epoch=longs,
    updates=st.lists(st.tuples(wire_rows, longs), max_size=4).map(tuple),
    produced_at=longs,
    valid_until=st.none() | longs,
    ttl_ms=st.none() | longs,
)
deletes = st.builds(
    Delete,
    collection=names,
    filter=wire_filters,
    reason=st.text(max_size=10),
    fence=st.none() | st.builds(Fence, names, longs),
)
wire_requests: st.SearchStrategy[Request] = st.one_of(
    appends,
    deletes,
    st.builds(ReplicaAdded, names, longs),
    st.builds(ReplicaRemoved, names, longs),
    st.builds(Heartbeat, names, longs, st.none() | longs),
)

# Model strategies: two small collections, few replicas, epochs, values.

REPLICAS = ("r1", "r2", "r3")
EPOCHS = (1, 2, 3)


def _schema(name: str, fields: list[tuple[str, Any]]) -> dict[str, Any]:
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


FRONTIERS = CollectionSpec(
    "frontiers",
    _schema(
        "frontiers",
        [
            ("replica_id", "string"),
            ("export_id", "string"),
            ("worker_id", "long"),
            ("frontier", ["null", "long"]),
        ],
    ),
    ("replica_id", "worker_id"),
)
HYDRATION = CollectionSpec(
    "hydration",
    _schema(
        "hydration",
        [
            ("replica_id", "string"),
            ("hydrated", "boolean"),
            ("load", ["null", "double"]),
        ],
    ),
    ("replica_id",),
)
MODEL_SPECS = (FRONTIERS, HYDRATION)

_DOMAINS: dict[str, st.SearchStrategy[Value]] = {
    "replica_id": st.sampled_from(REPLICAS),
    "export_id": st.sampled_from(("a", "b", "ab")),
    "worker_id": st.integers(0, 2),
    "frontier": st.integers(0, 3),
    "hydrated": st.booleans(),
    "load": st.sampled_from((0.5, 1.0, 2)),
}


def column_values(column: Column) -> st.SearchStrategy[Value]:
    """Values of ``column``'s small domain (and null where it is nullable)."""
    domain = _DOMAINS[column.name]
    return st.none() | domain if column.nullable else domain


def model_rows(spec: CollectionSpec, replica: str) -> st.SearchStrategy[tuple[Value, ...]]:
    """Rows of ``spec`` whose column 0 is ``replica``."""
    return st.tuples(st.just(replica), *[column_values(c) for c in spec.columns[1:]])


def _column_leaf(column: Column) -> st.SearchStrategy[Filter]:
    domain = _DOMAINS[column.name]
    ops = ("eq", "ne") if column.type == "boolean" else CMP_OPS
    options: list[st.SearchStrategy[Filter]] = [
        st.builds(Cmp, st.sampled_from(ops), st.just(column.name), domain),
        st.builds(In, st.just(column.name), st.lists(domain, min_size=1, max_size=3)),
        st.just(IsNull(column.name)),
    ]
    if column.type == "string":
        options.append(st.builds(Prefix, st.just(column.name), st.sampled_from(("", "a", "r"))))
    return st.one_of(options)


def _valid_compound(children: st.SearchStrategy[Filter]) -> st.SearchStrategy[Filter]:
    terms = st.lists(children, min_size=1, max_size=3).map(tuple)
    return st.one_of(st.builds(And, terms), st.builds(Or, terms), st.builds(Not, children))


def valid_filters(spec: CollectionSpec) -> st.SearchStrategy[Filter]:
    """Filters that pass ``validate`` for ``spec``."""
    leaves = st.one_of([_column_leaf(c) for c in spec.columns])
    return st.recursive(leaves, _valid_compound, max_leaves=6)


# Built once: building strategies inside draws makes generation several times slower.
_EPOCHS = st.sampled_from(EPOCHS)
_REPLICAS = st.sampled_from(REPLICAS)


def _appends(
    spec: CollectionSpec, replica: str, epochs: st.SearchStrategy[int] = _EPOCHS
) -> st.SearchStrategy[Append]:
    update = st.tuples(model_rows(spec, replica), st.integers(-2, 2))
    updates = st.lists(update, min_size=1, max_size=4).map(tuple)
    return st.builds(Append, st.just(spec.name), st.just(replica), epochs, updates, st.just(0))


def removal(collection: str, fence: Fence, reason: str = "") -> Delete:
    """What the controller sends to remove an incarnation: retract the replica's rows and
    fence its epoch."""
    return Delete(collection, Cmp("eq", "replica_id", fence.replica_id), reason, fence)


def _deletes(spec: CollectionSpec) -> st.SearchStrategy[Delete]:
    fence = st.builds(Fence, _REPLICAS, _EPOCHS)
    removal_ = fence.map(lambda f: removal(spec.name, f))
    other = st.builds(
        Delete, st.just(spec.name), valid_filters(spec), st.just(""), st.none() | fence
    )
    return removal_ | other


model_appends = st.one_of([_appends(spec, r) for spec in MODEL_SPECS for r in REPLICAS])
model_deletes = st.one_of([_deletes(spec) for spec in MODEL_SPECS])
model_requests: st.SearchStrategy[Request] = st.one_of(
    model_appends,
    model_appends,
    model_appends,
    model_deletes,
    st.builds(ReplicaAdded, _REPLICAS, _EPOCHS),
    st.builds(ReplicaRemoved, _REPLICAS, _EPOCHS),
    st.builds(Heartbeat, _REPLICAS, _EPOCHS, st.none()),
)
model_streams = st.lists(model_requests, min_size=10, max_size=40)


@st.composite
def removal_histories(draw: st.DrawFn) -> tuple[list[Request], int | None]:
    """One replica's incarnations in one collection's partition, as the controller orders
    them, with late duplicates of its removals (another controller's, delivered late).

    Epoch 1, 2, ... append in turn (at least once each); each but the last (and the last
    too, unless it lives) is removed by a fenced delete before the next appends
    (``add_replica`` removes first). Each late duplicate of a removal lands anywhere after
    it; other replicas append between. Returns the requests and the live epoch (None when
    every one was removed).
    """
    epochs, alive = draw(st.integers(1, 4)), draw(st.booleans())
    keyed: list[tuple[tuple[int, int, int], Request]] = []
    removed: list[tuple[int, Fence]] = []
    for epoch in range(1, epochs + 1):
        appends = st.lists(_appends(FRONTIERS, "r1", st.just(epoch)), min_size=1, max_size=3)
        for append in draw(appends):
            keyed.append(((len(keyed), 0, 0), append))
        if epoch < epochs or not alive:
            removed.append((len(keyed), Fence("r1", epoch)))
            keyed.append(((len(keyed), 0, 0), removal(FRONTIERS.name, Fence("r1", epoch))))
    length = len(keyed)
    if removed:
        late = st.tuples(st.sampled_from(removed), st.integers(0, length))
        for n, ((at, fence), after) in enumerate(draw(st.lists(late, max_size=4))):
            keyed.append(((max(at, after), 1, n), removal(FRONTIERS.name, fence, "late")))
    others = st.tuples(_appends(FRONTIERS, "r2", st.just(1)), st.integers(0, length))
    for n, (append, after) in enumerate(draw(st.lists(others, max_size=3))):
        keyed.append(((after, 2, n), append))
    return [request for _, request in sorted(keyed, key=lambda k: k[0])], (
        epochs if alive else None
    )
