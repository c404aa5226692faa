"""Sinks on the real broker and Redis: a collection's changes in a topic of its own, each
once, in order, in transactions that end where the collection is whole.

Requests are applied as the consumer applies them (``RedisStore.apply_requests``, each
bucket's parts in order), so no Spark runs here; the sink is the real process, in a thread
or as ``sinks run``. A topic is read as a plain client does: confluent-kafka with
``isolation.level=read_committed``, summing each row's diffs.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import Consumer, KafkaError, TopicPartition
from confluent_kafka.admin import AdminClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collection_manager.config import SinkConfig
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import Cut
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete, Request
from collection_manager.core.routing import route_append, route_delete
from collection_manager.core.sinks.spec import SinkError, SinkSpec
from collection_manager.core.specs import CollectionSpec
from collection_manager.reading.sinks import read_sinks
from collection_manager.sinks.kafka_side import prepare_topics
from collection_manager.sinks.process import SinkProcess
from collection_manager.sinks.records import CUT_HEADER, decode
from collection_manager.storage.heartbeats import SINK, read_liveness
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.sinks import SinkCatalog, readable_cut
from collection_manager.storage.store import RedisStore
from tests.support import SIZES_SCHEMA, assert_eventually

SCHEMA = SIZES_SCHEMA
BUCKETS = 4
REPLICAS = [f"r{n}" for n in range(8)]
# Unbucketed, a long stretch is cut into transactions of at most 7 changes; bucketed, a
# step is one transaction whatever its size (a step too large for the bound is refused).
_FAST = SinkConfig(sink_poll_interval_ms=20, sink_max_transaction_changes=7)
_FAST_BUCKETED = SinkConfig(sink_poll_interval_ms=20)


class Writer:
    """Applies requests as the consumer would: each part in offset order."""

    def __init__(self, store: RedisStore, spec: CollectionSpec) -> None:
        self.store, self.spec = store, spec
        self._offsets = itertools.count()

    def parts(self, request: Append | Delete) -> Sequence[Request]:
        if isinstance(request, Append):
            return route_append(request, self.spec)
        return route_delete(request, self.spec)

    def apply(self, request: Append | Delete) -> None:
        for part in self.parts(request):  # one at a time: a sink may look between them
            self.store.apply_requests(f"t-{self.spec.name}", 0, [(next(self._offsets), part)])


def _append(name: str, rows: Sequence[tuple[str, int, int]]) -> Append:
    updates = tuple(((replica, worker, None), diff) for replica, worker, diff in rows)
    return Append(name, "writer", 1, updates, 0)


def published(kafka: str, spec: SinkSpec, collection: CollectionSpec) -> list[dict[str, Any]]:
    """Every committed record of the sink's topic, decoded, in each partition's order."""
    consumer = Consumer(
        {
            "bootstrap.servers": kafka,
            "group.id": f"reader-{spec.name}",
            "isolation.level": "read_committed",
            "enable.partition.eof": True,
            "auto.offset.reset": "earliest",
        }
    )
    partitions = consumer.list_topics(spec.topic, timeout=30).topics[spec.topic].partitions
    consumer.assign([TopicPartition(spec.topic, p, 0) for p in partitions])
    found, ended, deadline = [], set(), time.monotonic() + 60
    try:
        while len(ended) < len(partitions) and time.monotonic() < deadline:
            message = consumer.poll(1.0)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == KafkaError._PARTITION_EOF, message.error()
                ended.add(message.partition())
                continue
            headers = dict(message.headers() or [])
            envelope = dict(decode(collection, spec.format, message.value()))
            assert headers[CUT_HEADER].decode() == envelope["cut"]
            found.append(envelope)
    finally:
        consumer.close()
    assert len(ended) == len(partitions), "the topic was not read to its end"
    return found


def summed(records: Sequence[dict[str, Any]]) -> dict[tuple[Any, ...], int]:
    totals: Counter[tuple[Any, ...]] = Counter()
    for record in records:
        totals[tuple(record["row"].values())] += record["diff"]
    return {row: count for row, count in totals.items() if count}


def started(process: SinkProcess) -> None:
    assert process.position is not None, "the sink's first transaction is not in yet"


def caught_up(process: SinkProcess, client: redis_lib.Redis, collection: CollectionSpec) -> None:
    readable = readable_cut(client, collection).times
    at = None if process.position is None else process.position.times
    assert at is not None and all(p >= r for p, r in zip(at, readable, strict=True)), (at, readable)


class RunningSink:
    """A sink's process in a thread of this test."""

    def __init__(self, spec: SinkSpec, client: redis_lib.Redis, kafka: str, buckets: int) -> None:
        config = _FAST if buckets == 1 else _FAST_BUCKETED
        self.process = SinkProcess(spec, client, kafka, config)
        self.stop, self.failed = threading.Event(), []
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.process.run(self.stop)
        except Exception as exc:
            self.failed.append(exc)

    def close(self) -> None:
        self.stop.set()
        self.thread.join(60)
        assert not self.failed, self.failed


@pytest.fixture
def made(redis: redis_lib.Redis, kafka: str, unique: str) -> Iterator[Any]:
    """Makes a collection (of ``buckets``) and its sink; drops both after the test."""
    store, created = RedisStore(redis), []

    def make(buckets: int, fmt: str = "json", suffix: str = "") -> tuple[CollectionSpec, SinkSpec]:
        name = f"sink-{unique}{suffix}"
        collection = CollectionSpec(name, SCHEMA, ("replica_id",), buckets=buckets)
        store.create_collection(collection)
        sink = SinkSpec(name, name, f"out-{name}", fmt)
        prepare_topics(kafka, sink, 2)
        SinkCatalog(redis).create(sink)
        created.append((collection, sink))
        return collection, sink

    yield make
    admin = AdminClient({"bootstrap.servers": kafka})
    for collection, sink in created:
        store.drop_collection(collection.name)
        SinkCatalog(redis).drop(sink.name)
        for future in admin.delete_topics([sink.topic, sink.progress_topic]).values():
            future.result(30)


_rows = st.lists(
    st.tuples(st.sampled_from(REPLICAS), st.integers(0, 2), st.sampled_from([1, 1, -1])),
    min_size=1,
    max_size=6,
)
_requests = st.lists(
    st.one_of(
        _rows.map(lambda rows: ("append", rows)),
        st.sampled_from(REPLICAS).map(lambda r: ("delete", r)),
        st.integers(0, 2).map(lambda w: ("delete_worker", w)),
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=6, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    before=_requests,
    during=_requests,
    buckets=st.sampled_from([1, BUCKETS]),
    fmt=st.sampled_from(["json", "avro"]),
)
def test_a_sinks_topic_adds_up_to_the_collection_at_the_position_it_reached(
    made: Any,
    redis: redis_lib.Redis,
    kafka: str,
    before: list[Any],
    during: list[Any],
    buckets: int,
    fmt: str,
) -> None:
    collection, sink = made(buckets, fmt, suffix=f"-{next(_EXAMPLES)}")
    writer = Writer(RedisStore(redis), collection)
    for request in before:  # before the sink starts: its first transaction holds them
        writer.apply(_request(collection.name, request))
    running = RunningSink(sink, redis, kafka, buckets)
    try:
        # Once its first transaction is in, the rest is followed from the change log.
        assert_eventually(lambda: started(running.process), timeout=60)
        for request in during:
            writer.apply(_request(collection.name, request))
        assert_eventually(lambda: caught_up(running.process, redis, collection), timeout=60)
    finally:
        running.close()
    records = published(kafka, sink, collection)
    snapshot = RedisStore(redis).snapshot(collection.name)
    assert summed(records) == snapshot.rows
    # Each change once: a (bucket, time, row) is in the log once, and so in the topic.
    changes = Counter((r["bucket"], r["time"], tuple(r["row"].values())) for r in records)
    assert max(changes.values(), default=1) == 1


_EXAMPLES = itertools.count()


def _request(name: str, request: tuple[str, Any]) -> Append | Delete:
    kind, what = request
    if kind == "append":
        return _append(name, what)
    if kind == "delete":
        return Delete(name, eq("replica_id", what))
    return Delete(name, eq("worker_id", what))


def start_sink(name: str, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    """``sinks run NAME`` as its own process, its output appended to ``log``."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "collection_manager.cli.main", "sinks", "run", name, "-v"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


class Generations:
    """Writes generation after generation: generation g is one append of a row of every
    replica (its rows in every bucket: a group of parts), then one delete of generation
    g - 1 that pins no bucket (a part in every bucket); each part applied on its own."""

    def __init__(self, writer: Writer) -> None:
        self.writer, self.written = writer, 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def _write(self) -> None:
        name = self.writer.spec.name
        while not self.stop.is_set():
            g = self.written + 1
            self.writer.apply(_append_notes(name, g))
            if g > 1:
                self.writer.apply(Delete(name, eq("note", f"g{g - 1}")))
            self.written = g
            time.sleep(0.01)


def _append_notes(name: str, generation: int) -> Append:
    updates = tuple(((replica, 0, f"g{generation}"), 1) for replica in REPLICAS)
    return Append(name, "writer", 1, updates, 0)


def states_at_each_cut(records: Sequence[dict[str, Any]]) -> Iterator[Counter[tuple[Any, ...]]]:
    """The collection as a reader of the topic has it after each transaction's records."""
    by_cut: dict[str, list[dict[str, Any]]] = {}
    for record in records:
        by_cut.setdefault(record["cut"], []).append(record)
    state: Counter[tuple[Any, ...]] = Counter()
    for cut in sorted(by_cut, key=lambda text: sum(int(t) for t in text.split(","))):
        for record in by_cut[cut]:
            state[tuple(record["row"].values())] += record["diff"]
        yield state


def test_a_sigkilled_sink_loses_nothing_doubles_nothing_and_shows_no_half_request(
    made: Any, redis: redis_lib.Redis, kafka: str, endpoints: Any, tmp_path: Path
) -> None:
    collection, sink = made(BUCKETS)
    assert len({bucket_of(r, BUCKETS) for r in REPLICAS}) == BUCKETS  # a generation: all
    writer = Writer(RedisStore(redis), collection)
    env = dict(
        os.environ,
        CM_REDIS_URL=endpoints.redis_url,
        CM_KAFKA_BOOTSTRAP=kafka,
        CM_STATE_DIR=str(tmp_path / "state"),
        CM_SINK_POLL_INTERVAL_MS="20",
    )
    log = tmp_path / "sink.log"
    generations = Generations(writer)
    generations.thread.start()
    process = start_sink(sink.name, env, log)
    try:
        for kill_after in (2.5, 1.0, 4.0):  # mid-transaction or between: wherever it is
            time.sleep(kill_after)
            os.kill(process.pid, signal.SIGKILL)
            process.wait(30)
            process = start_sink(sink.name, env, log)
        time.sleep(2)
        generations.stop.set()
        generations.thread.join(30)
        assert generations.written > 3, log.read_text()
        assert_eventually(lambda: heartbeat_caught_up(redis, sink, collection), timeout=90)
        # status shows it, from the same beat.
        [shown] = [s for s in read_sinks(redis) if s["name"] == sink.name]
        assert (shown["state"], shown["topic"], shown["behind"]) == ("running", sink.topic, 0)
    finally:
        generations.stop.set()
        process.send_signal(signal.SIGTERM)
        process.wait(30)
    assert process.returncode == 0, log.read_text()[-3000:]
    assert "Traceback" not in log.read_text()
    records = published(kafka, sink, collection)
    assert summed(records) == RedisStore(redis).snapshot(collection.name).rows
    assert summed(records) == {(r, 0, f"g{generations.written}"): 1 for r in REPLICAS}
    changes = Counter((r["bucket"], r["time"], tuple(r["row"].values())) for r in records)
    assert max(changes.values()) == 1, "a change was published twice"
    for state in states_at_each_cut(records):
        held = Counter(row[2] for row, count in state.items() if count)
        # Each generation whole or not at all: no append or delete seen in part.
        assert all(count == len(REPLICAS) for count in held.values()), held
        assert all(count in (0, 1) for count in state.values())


def heartbeat_caught_up(
    client: redis_lib.Redis, sink: SinkSpec, collection: CollectionSpec
) -> None:
    last = read_liveness(client, SINK, sink.name).last or {}
    position = last.get("position")
    assert position is not None, "no beat with a position yet"
    readable = readable_cut(client, collection)
    at = Cut.parse(position, collection.buckets).times
    assert all(p >= r for p, r in zip(at, readable.times, strict=True)), (position, readable)


def test_a_sink_whose_position_the_log_trimmed_stops_saying_how_to_go_on(
    made: Any, redis: redis_lib.Redis, kafka: str
) -> None:
    collection, sink = made(1)
    writer = Writer(RedisStore(redis), collection)
    writer.apply(_append(collection.name, [("r1", 0, 1)]))
    running = RunningSink(sink, redis, kafka, 1)
    assert_eventually(lambda: started(running.process), timeout=60)
    running.close()
    for worker in range(1, 6):  # while it is stopped
        writer.apply(_append(collection.name, [("r2", worker, 1)]))
    # The retention (CM_LOG_MAX_LENGTH) takes changes the sink has still to publish.
    redis.xtrim(CollectionKeys(collection.name).log, maxlen=1, approximate=False)
    with pytest.raises(SinkError, match=r"fell behind the change log's retention.*new topic"):
        SinkProcess(sink, redis, kafka, _FAST).run(threading.Event())
    # Nothing was published past the gap: the topic still holds the first transaction only.
    assert summed(published(kafka, sink, collection)) == {("r1", 0, None): 1}
