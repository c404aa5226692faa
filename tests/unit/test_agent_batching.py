"""The agent without a broker: batching, published state, cancel mid-snapshot, heartbeats."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError
from prometheus_client import CollectorRegistry

from collection_manager.config.errors import ConfigError
from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.requests import MAX_TTL_MS, Append, Heartbeat, Request
from collection_manager.core.shutdown import ShutdownToken
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from producers.agent import ReplicaAgent
from producers.agent_config import AgentConfig
from producers.batching import PublishedState, append_batches, with_replica
from producers.metrics import AgentCollector, stop_cause
from producers.simulated import COLUMNS, SimulatedReplica, Update
from producers.subscribe import Publishing, Subscribe
from schemas.codec import decode_request
from tests.support import assert_eventually


def test_rows_get_the_replica_id_in_front() -> None:
    assert list(with_replica("r1", [(("u1", 0, 5), 1), (("u1", 0, 4), -1)])) == [
        (("r1", "u1", 0, 5), 1),
        (("r1", "u1", 0, 4), -1),
    ]


def test_updates_are_cut_into_appends_of_at_most_batch_rows_in_order() -> None:
    updates = [(("r1", i), 1) for i in range(7)]
    batches = list(append_batches("c", "r1", 3, updates, batch_rows=3, produced_at=42))
    assert [len(b.updates) for b in batches] == [3, 3, 1]
    assert [u for b in batches for u in b.updates] == updates
    assert all(
        (b.collection, b.replica_id, b.epoch, b.produced_at) == ("c", "r1", 3, 42) for b in batches
    )
    assert list(append_batches("c", "r1", 3, [], batch_rows=3, produced_at=0)) == []
    with pytest.raises(ValueError, match="positive"):
        list(append_batches("c", "r1", 3, updates, batch_rows=0, produced_at=0))


def test_batches_are_made_lazily() -> None:
    def endless() -> Any:
        i = 0
        while True:
            yield ("r1", i), 1
            i += 1

    first = next(append_batches("c", "r1", 1, endless(), batch_rows=2, produced_at=0))
    assert first.updates == ((("r1", 0), 1), (("r1", 1), 1))


def test_published_state_consolidates_in_any_order() -> None:
    state = PublishedState(["c", "empty"])
    state.add(Append("c", "r1", 1, [(("r1", 2), 1)], 0))
    state.add(Append("c", "r1", 1, [(("r1", 1), -1), (("r1", 2), -1), (("r1", 3), 1)], 0))
    state.add(Append("c", "r1", 1, [(("r1", 1), 1), (("r1", 2), 1)], 0))
    assert state.state() == {"c": Counter({("r1", 2): 1, ("r1", 3): 1}), "empty": Counter()}


class _Message:
    def __init__(self, topic: str, key: bytes, value: bytes, partition: int = -1) -> None:
        self._topic, self._key, self._value = topic, key, value
        self._partition = partition  # -1: the producer's partitioner picks (not modelled)

    def topic(self) -> str:
        return self._topic

    def key(self) -> bytes:
        return self._key

    def value(self) -> bytes:
        return self._value

    def partition(self) -> int:
        return max(self._partition, 0)

    def asked_partition(self) -> int:
        """The partition the producer was asked for (-1: none, its key picks)."""
        return self._partition


class Broker:
    """Stands in for Kafka: each producer holds messages until poll or flush delivers them.

    Args:
        hold: keep messages queued on poll (only flush delivers), as a slow broker would.
        on_produce: called with the number of messages produced so far.
        fails: the messages (by their count, from 1) whose delivery times out.
    """

    def __init__(
        self,
        hold: bool = False,
        on_produce: Callable[[int], None] | None = None,
        fails: frozenset[int] = frozenset(),
    ) -> None:
        self.hold = hold
        self.on_produce = on_produce
        self.fails = fails
        self.delivered: list[_Message] = []
        self.produced = 0
        self.lock = threading.RLock()

    def producer(self, config: ProducerConfig) -> KafkaProducer:
        return KafkaProducer(config, factory=lambda _options: _FakeProducer(self))

    def requests(self) -> list[Request]:
        with self.lock:
            return [decode_request(m.value()) for m in self.delivered]


class _FakeProducer:
    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.queue: list[tuple[_Message, Callable[..., None]]] = []

    def __len__(self) -> int:
        return len(self.queue)

    def produce(
        self,
        topic: str,
        value: bytes,
        key: bytes,
        on_delivery: Any,
        headers: Any,
        partition: int = -1,
    ) -> None:
        with self.broker.lock:
            self.broker.produced += 1
            count = self.broker.produced
        if count in self.broker.fails:
            on_delivery = _timing_out(on_delivery)
        self.queue.append((_Message(topic, key, value, partition), on_delivery))
        if self.broker.on_produce is not None:
            self.broker.on_produce(count)

    def poll(self, _timeout: float = 0) -> int:
        return 0 if self.broker.hold else self._deliver()

    def flush(self, _timeout: float = -1) -> int:
        self._deliver()
        return 0

    def purge(self, in_queue: bool, in_flight: bool, blocking: bool) -> None:
        queued, self.queue = self.queue, []
        for message, callback in queued:
            callback(KafkaError(KafkaError._PURGE_QUEUE), message)

    def _deliver(self) -> int:
        ready, self.queue = self.queue, []
        for message, callback in ready:
            with self.broker.lock:
                self.broker.delivered.append(message)
            callback(None, message)
        return len(ready)


def _timing_out(callback: Callable[..., None]) -> Callable[..., None]:
    """``callback``, told that its message timed out, whatever the broker says."""
    return lambda _err, message: callback(KafkaError(KafkaError._MSG_TIMED_OUT), message)


class _Snapshot:
    """A source whose snapshot is ``rows`` rows of one collection."""

    def __init__(self, rows: int) -> None:
        self.rows = rows

    def snapshot(self) -> Mapping[str, Sequence[Update]]:
        return {"big": [((i,), 1) for i in range(self.rows)]}

    def step(self) -> Mapping[str, Sequence[Update]]:
        return {"big": []}


def _publishing(max_steps: int | None = 0) -> Publishing:
    return Publishing("r1", 1, "topic", 10, 10, max_steps, lambda: 0)


def test_cancel_in_the_middle_of_a_snapshot_stops_and_purges_what_is_queued() -> None:
    token = ShutdownToken("sub")
    broker = Broker(hold=True, on_produce=lambda n: n == 50 and token.cancel("replica removed"))
    published = PublishedState()
    failures: list[str] = []
    producer = broker.producer(ProducerConfig("fake"))
    subscribe = Subscribe(
        "big", _Snapshot(100_000), "big", _publishing(), producer, token, published, failures.append
    )
    subscribe.start()
    subscribe.join(10)

    # 50 requests of 10 rows left before the cancel; none after; none reached the broker.
    assert broker.produced == 50
    assert broker.delivered == []
    assert producer.stats().purged == 50
    assert published.state() == {}
    assert failures == []


def test_a_subscribe_publishes_its_snapshot_and_records_what_was_acknowledged() -> None:
    broker = Broker()
    published = PublishedState()
    subscribe = Subscribe(
        "big", _Snapshot(25), "big", _publishing(), broker.producer(ProducerConfig("fake")),
        ShutdownToken("sub"), published, lambda _reason: None,
    )  # fmt: skip
    subscribe.start()
    subscribe.join(10)
    appends = broker.requests()
    assert [len(a.updates) for a in appends if isinstance(a, Append)] == [10, 10, 5]
    assert published.state() == {"big": Counter({("r1", i): 1 for i in range(25)})}


def test_a_request_the_broker_never_acknowledged_stops_the_incarnation() -> None:
    broker = Broker(fails=frozenset({2}))
    published = PublishedState()
    failures: list[str] = []
    subscribe = Subscribe(
        "big", _Snapshot(25), "big", _publishing(max_steps=5),
        broker.producer(ProducerConfig("fake")), ShutdownToken("sub"), published,
        failures.append,
    )  # fmt: skip
    subscribe.start()
    subscribe.join(10)

    assert not subscribe.alive and not subscribe.settled
    assert len(failures) == 1
    assert "never acknowledged a request of big (_MSG_TIMED_OUT" in failures[0]
    assert "incarnation stops" in failures[0]
    # The snapshot's 3 requests were handed over before the report came; no step followed,
    # and what is recorded as published lacks the one that failed.
    assert broker.produced == 3
    assert published.state() == {
        "big": Counter({("r1", i): 1 for i in (*range(10), *range(20, 25))})
    }


def _agent(broker: Broker, still: Callable[[str, int], bool] | None = None) -> ReplicaAgent:
    config = AgentConfig(
        "fake", "topic", workers=2, dataflows=2, seed=7, step_interval_ms=5, max_steps=3,
        heartbeat_interval_ms=5, batch_rows=4, collection_suffix="-t",
    )  # fmt: skip
    return ReplicaAgent("r1", config, still_member=still, producer_factory=broker.producer)


def test_an_agent_publishes_tagged_state_and_heartbeats_with_its_epoch() -> None:
    broker = Broker()
    agent = _agent(broker)
    agent.start(5)
    try:
        assert_eventually(lambda: _assert(agent.settled), timeout=10)
        expected = SimulatedReplica(2, 2, seed=7)
        for _ in range(3):
            expected.step()
        state = agent.state()
        for name, rows in expected.state().items():
            assert state[f"{name}-t"] == Counter({("r1", *row): n for row, n in rows.items()})
        assert [row[0] for row in state["replica_metrics-t"]] == ["r1"]
        requests = broker.requests()
        appends = [r for r in requests if isinstance(r, Append)]
        assert {a.epoch for a in appends} == {5}
        # Every collection with rows was published (error counts may have none yet).
        assert {a.collection for a in appends} >= {name for name, rows in state.items() if rows}
        assert any(r == Heartbeat("r1", 5, r.sent_at) for r in requests if isinstance(r, Heartbeat))
    finally:
        agent.stop()
        agent.join(10)


def test_an_agent_stops_once_it_is_no_longer_a_member() -> None:
    member = threading.Event()
    member.set()
    broker = Broker()
    agent = _agent(broker, still=lambda replica, epoch: member.is_set() and epoch == 2)
    agent.start(2)
    try:
        member.clear()
        assert agent.wait(10)
        assert "no longer a member" in (agent.reason or "")
    finally:
        agent.stop()
        agent.join(10)


def test_an_agents_metrics_count_what_its_producers_counted() -> None:
    broker = Broker()
    agent = _agent(broker)
    registry = CollectorRegistry()
    registry.register(AgentCollector(agent))
    agent.start(5)
    try:
        assert_eventually(lambda: _assert(agent.settled), timeout=10)
        stats = agent.stats()
        for collection, counted in stats.items():
            labels = {"replica": "r1", "collection": collection}
            sample = registry.get_sample_value
            assert sample("cm_agent_requests_produced_total", labels) == counted.produced
            assert sample("cm_agent_requests_delivered_total", labels) == counted.delivered
        assert sum(s.delivered for s in stats.values()) > 0
        updates = agent.updates_delivered()
        assert sum(updates.values()) > 0
        for collection, count in updates.items():
            labels = {"replica": "r1", "collection": collection}
            assert registry.get_sample_value("cm_agent_updates_delivered_total", labels) == count
        assert registry.get_sample_value("cm_agent_active", {"replica": "r1"}) == 1
        assert registry.get_sample_value("cm_agent_epoch", {"replica": "r1"}) == 5
    finally:
        agent.stop()
        agent.join(10)
    assert registry.get_sample_value("cm_agent_active", {"replica": "r1"}) == 0
    stops = {"replica": "r1", "cause": "cancelled"}
    assert registry.get_sample_value("cm_agent_stops_total", stops) == 1
    assert registry.get_sample_value("cm_agent_stops_total", {**stops, "cause": "removed"}) == 0


def test_an_agent_stop_is_told_by_its_cause() -> None:
    assert stop_cause("replica r1 epoch 2 is no longer a member") == "removed"
    assert stop_cause("subscribe c was silent for 4.0 s, over half its rows' TTL") == "silent"
    assert stop_cause("agent stopping") == "cancelled"


def test_an_agent_starts_once_and_only_with_an_epoch() -> None:
    agent = _agent(Broker())
    with pytest.raises(CollectionManagerError, match="epoch 0"):
        agent.start(0)
    assert agent.state() == {f"{name}-t": Counter() for name in [*COLUMNS, "replica_metrics"]}


def _assert(condition: bool) -> None:
    assert condition


class _Changing:
    """A source of one collection: rows 0 and 1, then each step replaces row ``step``."""

    def __init__(self) -> None:
        self.steps = 0

    def snapshot(self) -> Mapping[str, Sequence[Update]]:
        return {"c": [((0,), 1), ((1,), 1)]}

    def step(self) -> Mapping[str, Sequence[Update]]:
        self.steps += 1
        return {"c": [((self.steps - 1,), -1), ((self.steps + 1,), 1)]} if self.steps < 3 else {}


def _ttl_subscribe(
    broker: Broker, failures: list[str], monotonic: Callable[[], float], max_steps: int = 2
) -> Subscribe:
    return Subscribe(
        "c", _Changing(), "c", _publishing(max_steps), broker.producer(ProducerConfig("fake")),
        ShutdownToken("sub"), PublishedState(), failures.append, ttl_ms=4_000, monotonic=monotonic,
    )  # fmt: skip


def test_a_subscribe_with_a_ttl_names_every_current_row_at_every_step_and_after() -> None:
    broker, failures = Broker(), list[str]()
    subscribe = _ttl_subscribe(broker, failures, lambda: 0.0)  # never idle for long
    subscribe.start()
    try:
        # Steps go on after max_steps (refreshes only), until cancelled.
        assert_eventually(lambda: _assert(len(broker.requests()) >= 5), timeout=10)
        assert subscribe.settled and subscribe.alive
    finally:
        subscribe.cancel("test over")
        subscribe.join(10)
    appends = [r for r in broker.requests() if isinstance(r, Append)]
    assert {a.ttl_ms for a in appends} == {4_000}
    assert [set(a.updates) for a in appends[:4]] == [
        {(("r1", 0), 1), (("r1", 1), 1)},
        {(("r1", 0), -1), (("r1", 2), 1), (("r1", 1), 0)},  # a change, then a refresh
        {(("r1", 1), -1), (("r1", 3), 1), (("r1", 2), 0)},
        {(("r1", 2), 0), (("r1", 3), 0)},  # settled: refreshes only
    ]
    assert failures == []


def test_a_subscribe_silent_for_half_its_ttl_stops_the_agent() -> None:
    broker, failures = Broker(), list[str]()
    # Each publish reads the clock as it begins and ends: 1 s idle, then 3 s (over 2 s).
    ticks = iter([0.0, 0.0, 1.0, 1.0, 4.0])
    subscribe = _ttl_subscribe(broker, failures, lambda: next(ticks), max_steps=5)
    subscribe.start()
    subscribe.join(10)
    assert not subscribe.alive
    assert len(failures) == 1
    assert "silent for 3.0 s, over half its rows' TTL of 4 s" in failures[0]
    assert len([r for r in broker.requests() if isinstance(r, Append)]) == 2


@pytest.mark.parametrize("ttl_ms", [-1, 1, 3_999, MAX_TTL_MS + 1])
def test_an_agent_refuses_a_row_ttl_outside_its_bounds(ttl_ms: int) -> None:
    with pytest.raises(
        ConfigError, match=rf"row_ttl_ms={ttl_ms}: must be 0 \(no TTL\) or between 4000"
    ):
        AgentConfig("fake", step_interval_ms=1_000, row_ttl_ms=ttl_ms)
    assert AgentConfig("fake", step_interval_ms=1_000, row_ttl_ms=4_000).row_ttl_ms == 4_000
