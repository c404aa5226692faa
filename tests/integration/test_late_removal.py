"""A race the chaos run found (``test_chaos.py``, seed 3320670385 in ``make test-slow``):
a removal of a replica's old incarnation that began before the replica was added again,
and whose deletes reach the topic after the new incarnation's first appends, retracted the
new incarnation's rows, while the new incarnation stayed active and its agent held them
(issue 42).

Two controllers share a namespace as ``controller run`` and ``replica run`` do: the lease
loop starts removing epoch 1 (a member left ``removing``, or a lease that ended), and its
deletes are held up on their way to the broker (a partition leader moving); meanwhile the
agent starts again, and its ``add_replica`` removes epoch 1 itself and adds epoch 2, which
appends. Then the lease loop's deletes arrive: ``Delete(replica_id = r, fence = (r, 1))``
behind epoch 2's append. The collection fences epoch 1 already (the add's own removal came
first in that partition), so the late delete retracts nothing (docs/concepts/epochs-and-fences.md).
Here the producers are fakes that keep the topic's order in a list, which the model
(``tests/model/model.py``) and the Redis store both apply.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections import Counter
from collections.abc import Iterable
from typing import Any

import redis as redis_lib
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.control.members import REMOVING
from collection_manager.core.requests import Append, Delete, Fence, Request
from collection_manager.core.specs import Row
from collection_manager.storage.store import RedisStore
from schemas.codec import decode_request
from schemas.introspection import introspection_specs
from tests.model.model import ModelStore
from tests.support import assert_eventually
from tests.unit.strategies import FRONTIERS, removal_histories


@dataclasses.dataclass
class _Delivered:
    failed: int = 0


class _Broker:
    """The topic, as the order in which requests arrive."""

    def __init__(self) -> None:
        self.log: list[Request] = []
        self._lock = threading.Lock()

    def producer(self, held: threading.Event | None = None) -> Any:
        broker = self

        class Producer:
            """Delivers at ``flush``, once ``held`` (if any) is set."""

            def __init__(self) -> None:
                self._queued: list[bytes] = []

            def produce(self, _topic: str, _key: bytes, value: bytes, **_: Any) -> None:
                self._queued.append(value)

            def flush(self, _timeout: float = 0) -> int:
                if held is not None:
                    held.wait(30)
                with broker._lock:
                    broker.log.extend(decode_request(value) for value in self._queued)
                self._queued.clear()
                return 0

            def stats(self) -> _Delivered:
                return _Delivered()

            def close(self, _timeout: float = 0) -> int:
                return 0

        return Producer()

    def append(self, request: Request) -> None:
        with self._lock:
            self.log.append(request)


def test_a_removal_delivered_after_the_re_added_incarnation_appended_leaves_its_rows(
    redis: redis_lib.Redis, unique: str
) -> None:
    config = ReplicaConfig(replica_namespace=f"cm:replicas:{unique}", collection_suffix=unique)
    specs = [dataclasses.replace(s, name=s.name + unique) for s in introspection_specs()]
    store = RedisStore(redis)
    for spec in specs:
        store.create_collection(spec)
    frontiers = next(s for s in specs if s.name.startswith("compute_frontiers"))
    broker, held = _Broker(), threading.Event()
    lease_loop = Controller(broker.producer(held), redis, "t", config)
    agent = Controller(broker.producer(), redis, "t", config)

    def row(epoch: int) -> Append:
        return Append(frontiers.name, "r", epoch, ((("r", "e", 0, epoch), 1),), produced_at=0)

    assert agent.add_replica("r") == 1
    broker.append(row(1))
    removal = threading.Thread(target=lease_loop.remove_replica, args=("r", "lease ended", 1))
    removal.start()
    try:

        def removing() -> None:
            member = agent.member("r")
            assert member is not None and member.state == REMOVING

        assert_eventually(removing, 30)
        assert agent.add_replica("r") == 2  # the agent started again
        broker.append(row(2))
    finally:
        held.set()  # the lease loop's deletes arrive
        removal.join(30)

    assert agent.is_current("r", 2)
    late = [r for r in broker.log[-len(specs) - 1 :] if isinstance(r, Delete)]
    assert [(d.reason, d.fence) for d in late if d.collection == frontiers.name] == [
        ("lease ended", Fence("r", 1))
    ]  # the lease loop's delete came last: the race happened
    model = ModelStore(specs)
    model.apply_all(broker.log)
    assert model.collection(frontiers.name).snapshot()[0] == {("r", "e", 0, 2): 1}
    # The store applies the topic's order as the consumer would (one partition here).
    store.apply_requests(f"t{unique}", 0, list(enumerate(broker.log)))
    for spec in specs:
        assert store.snapshot(spec.name).rows == model.collection(spec.name).snapshot()[0]
        assert store.reader.fences(spec.name) == model.collection(spec.name).fences.as_dict()
    assert store.reader.fences(frontiers.name) == {"r": 1}


@settings(
    max_examples=40,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(history=removal_histories(), cut=st.integers(1, 8))
def test_the_store_keeps_a_replica_s_live_incarnation_whatever_late_removals_come(
    redis: redis_lib.Redis, history: tuple[list[Request], int | None], cut: int
) -> None:
    """The Lua library applies the rule as the model does: a fenced delete of an epoch the
    collection fences already retracts nothing, applied in groups of ``cut`` requests."""
    requests, live = history
    store = RedisStore(redis, chunk_updates=5, delete_step_rows=2)
    spec = dataclasses.replace(FRONTIERS, name=f"{FRONTIERS.name}-{uuid.uuid4().hex[:8]}")
    store.create_collection(spec)
    renamed: list[Request] = [
        dataclasses.replace(r, collection=spec.name)
        for r in requests
        if isinstance(r, Append | Delete)  # all of them
    ]
    try:
        for start in range(0, len(renamed), cut):
            group = list(enumerate(renamed))[start : start + cut]
            store.apply_requests("t", 0, group)
        model = ModelStore([spec])
        model.apply_all(renamed)
        rows = store.snapshot(spec.name).rows
        assert rows == model.collection(spec.name).snapshot()[0]
        mine = {row: n for row, n in rows.items() if row[0] == "r1"}
        assert mine == _sums(r for r in renamed if isinstance(r, Append) and r.epoch == live)
        assert store.reader.fences(spec.name) == model.collection(spec.name).fences.as_dict()
    finally:
        store.drop_collection(spec.name)


def _sums(appends: Iterable[Append]) -> dict[Row, int]:
    """The rows of r1 the appends leave, consolidated."""
    sums: Counter[Row] = Counter()
    for append in appends:
        if append.replica_id == "r1":
            for row, diff in append.updates:
                sums[row] += diff
    return {row: total for row, total in sums.items() if total != 0}
