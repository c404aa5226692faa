"""Issue 41 on a Redis Cluster: readers see every group of bucket parts whole or not at all,
while the consumer is SIGKILLed and a Redis primary fails over losing its last writes.

A collection of eight buckets spread over three primaries (each with a replica) is written
by a raw producer through ``producers/routing.py`` on a topic of four partitions, in
*generations*: generation ``g`` is one append of its rows in every bucket (a group of eight
parts), then one delete of ``generation < g`` that pins no bucket (a group of eight parts
too, each a delete in steps). The real consumer applies them, each bucket's parts in its
partition's order. Meanwhile a reader reads the whole collection again and again,
``snapshot`` and ``stepped_snapshot`` in turn, and every answer must be a state the
requests leave between two of them: generation ``g`` alone, or ``g - 1`` and ``g``, each
generation whole and each row once. Half an append shows part of a generation; half a
delete, part of an old one. Answers never go back, but for the failover below.

Faults: the consumer is SIGKILLed mid-run and started again (the watermarks make its replay
change nothing). Then the primary of some buckets (not of the settled cut) is cut off from
its replica while the consumer applies more parts there, and SIGKILLed: the promoted
replica lacks those parts, so reads go back (as far as the consumer's replication barrier,
CM_REDIS_REPLICA_ACKS=1, had confirmed) but must still be whole: the settled cut never
covers what the replicas did not hold, so the other buckets' parts of the lost groups stay
held back until the replay applies them again. Reads that fail meanwhile are read again.
At the end every read holds exactly the last generation, and each bucket counted each of
its parts once.
"""

from __future__ import annotations

import itertools
import os
import random
import signal
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import cast

import pytest
import redis
from confluent_kafka import Consumer, TopicPartition
from redis.crc import key_slot

from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import CutError
from collection_manager.core.filters import lt
from collection_manager.core.requests import Append, Delete, Request
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import SteppedReadError
from collection_manager.devservices.redis_cluster import (
    LocalRedisCluster,
    RedisNode,
    start_cluster,
)
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.client import patiently, redis_client
from collection_manager.storage.keys import CollectionKeys, cut_key, unit_tag
from collection_manager.storage.progress import ProgressRecord
from collection_manager.storage.reads import Snapshot
from collection_manager.storage.store import RedisStore
from producers.routing import messages_for, requests_for
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.support import assert_eventually

BUCKETS = 8
# Two replicas' rows in each bucket, WORKERS rows each: 60 rows of a generation per bucket,
# so a delete meets 120 candidates there, more than a step takes (DELETE_STEP_ROWS, 100).
REPLICAS = [
    replica
    for bucket in range(BUCKETS)
    for replica in itertools.islice(
        (r for r in (f"r{n}" for n in itertools.count()) if bucket_of(r, BUCKETS) == bucket), 2
    )
]
WORKERS = 30
SCHEMA = {
    "type": "record",
    "name": "generations",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "generation", "type": "long"},
        {"name": "worker_id", "type": "long"},
    ],
}
# How far the writer runs ahead of what readers see, in generations: enough to keep
# batches in flight at every fault, little enough that a restarted consumer catches up soon.
AHEAD = 12
PAUSE_S = 0.2
CONSUMER = {
    # A replica holds a batch before progress counts it, and a cut before it is settled.
    "CM_REDIS_REPLICA_ACKS": "1",
    "CM_REDIS_REPLICA_ACK_TIMEOUT_MS": "2000",
}


def generation(g: int) -> dict[Row, int]:
    """The rows generation ``g`` appends, each once."""
    return {(r, g, w): 1 for r in REPLICAS for w in range(WORKERS)}


def state_of(rows: dict[Row, int]) -> int:
    """Which state between two requests ``rows`` are: ``2g - 1`` after generation ``g``'s
    append (generations ``g - 1`` and ``g``), ``2g`` after its delete (``g`` alone), 0
    before the first; each generation whole, each row once.

    Raises:
        AssertionError: they are no such state (a group read half applied, a row twice).
    """
    assert all(n == 1 for n in rows.values()), {r: n for r, n in rows.items() if n != 1}
    found = sorted({cast(int, row[1]) for row in rows})
    assert not found or (len(found) <= 2 and found[-1] - found[0] == len(found) - 1), found
    for g in found:
        held = {row for row in rows if row[1] == g}
        missing = {bucket_of(r[0], BUCKETS) for r in set(generation(g)) - held}
        assert not missing, (
            f"generation {g} of {found} is not whole: {len(held)} of {len(generation(g))} "
            f"rows, buckets {sorted(missing)} lack some"
        )
    return 2 * found[-1] - (len(found) - 1) if found else 0


class Reader:
    """Reads the collection in a loop (``snapshot`` and ``stepped_snapshot`` in turn) and
    checks each answer; a read that meets a failover is read again (``patiently``)."""

    def __init__(self, store: RedisStore, name: str) -> None:
        self._store, self._name = store, name
        self.latest = 0  # the generation of the last read
        self.reads = self.retried = self.went_back = 0
        self.may_go_back = False  # set while a failover may lose writes readers saw
        self.failure: BaseException | None = None
        self.state, self._cut = 0, (0,) * BUCKETS
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="reader", daemon=True)

    def __enter__(self) -> Reader:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(120)

    def _read(self, read: Callable[[str], Snapshot]) -> Snapshot:
        """``read`` of the collection, again while Redis fails over or a read is refused
        for now (settles overtook it, a delete it waits for is not being finished)."""

        def once() -> Snapshot:
            self.retried += 1
            return read(self._name)

        for attempt in itertools.count():
            try:
                found = patiently(once, timeout_s=60)
                self.retried -= 1
                return found
            except (CutError, SteppedReadError):
                if attempt == 10:
                    raise
                time.sleep(0.5)
        raise AssertionError("unreachable")

    def _run(self) -> None:
        reads = itertools.cycle([self._store.snapshot, self._store.stepped_snapshot])
        try:
            while not self._stop.wait(0.02):
                found = self._read(next(reads))
                assert found.cut is not None
                state = state_of(found.rows)
                back = state < self.state or any(
                    t < before for t, before in zip(found.cut.times, self._cut, strict=True)
                )
                assert not back or self.may_go_back, (
                    f"state {state} at cut {found.cut.text()} after {self.state} at {self._cut}"
                )
                self.went_back += back
                self.state, self._cut = state, found.cut.times
                self.latest = (state + 1) // 2
                self.reads += 1
        except BaseException as exc:  # reported by healthy()
            self.failure = exc

    def healthy(self) -> None:
        if self.failure is not None:
            raise RuntimeError(f"a read failed after {self.reads} reads") from self.failure


class Writer:
    """Produces generation after generation (routed: each request's parts keyed by bucket),
    at most ``AHEAD`` ahead of what ``reader`` saw."""

    def __init__(self, kafka: str, topic: str, spec: CollectionSpec, reader: Reader) -> None:
        self._kafka, self._topic, self._spec, self._reader = kafka, topic, spec, reader
        self.sent = 0  # the last generation produced
        self.parts = [0] * BUCKETS  # requests sent to each bucket
        self.failure: BaseException | None = None
        self._paused = False
        self._lock = threading.Lock()  # held while a generation is produced
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="writer", daemon=True)

    def __enter__(self) -> Writer:
        self._thread.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._stop.set()
        self._thread.join(90)

    def requests(self, g: int) -> list[Request]:
        name = self._spec.name
        append = Append(name, "writer", 1, tuple(generation(g).items()), int(time.time() * 1000))
        return [append, Delete(name, lt("generation", g), f"older than {g}")]

    def _run(self) -> None:
        out = KafkaProducer(ProducerConfig(self._kafka, client_id="test-bucket-cuts"))
        try:
            while not self._stop.wait(PAUSE_S):
                with self._lock:
                    if not self._paused and self.sent - self._reader.latest < AHEAD:
                        self._produce(out, self.sent + 1)
                        self.sent += 1
                out.poll(0)
            assert out.flush(60) == 0 and out.stats().failed == 0, out.stats()
        except BaseException as exc:
            self.failure = exc
        finally:
            out.close(10)

    def _produce(self, out: KafkaProducer, g: int) -> None:
        for request in self.requests(g):
            parts = requests_for(request, self._spec)
            buckets = [
                p.bucket.bucket
                for p in parts
                if isinstance(p, Append | Delete) and p.bucket is not None
            ]
            assert sorted(buckets) == list(range(BUCKETS))  # one group over all
            for bucket in buckets:
                self.parts[bucket] += 1
            for message in messages_for(request, self._spec):
                out.produce(self._topic, message.key, message.value, partition=message.partition)

    def pause(self, paused: bool = True) -> int:
        """Pauses (or resumes) after the generation it is producing; returns the last one."""
        with self._lock:
            self._paused = paused
            return self.sent

    def stop(self) -> int:
        """Stops after the generation it is producing; returns the last one, delivered."""
        self._stop.set()
        self._thread.join(90)
        if self.failure is not None:
            raise RuntimeError("the writer failed") from self.failure
        return self.sent


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    found = start_cluster(tmp_path_factory.mktemp("redis-buckets"), masters=3, replicas=1)
    yield found
    found.stop()


def _recorded_all(kafka: str, topic: str, url: str) -> Callable[[], None]:
    """A check that passes once the consumer's progress record counts every record the
    topic holds now: its last batch is done, and the next one reads new records."""
    ends = Consumer({"bootstrap.servers": kafka, "group.id": f"{topic}-ends"})
    try:
        end = {p: ends.get_watermark_offsets(TopicPartition(topic, p), 10)[1] for p in range(4)}
    finally:
        ends.close()
    progress = ProgressRecord(redis_client(url), topic)

    def check() -> None:
        done = progress.read().offsets
        assert all(done.get(p, -1) >= last - 1 for p, last in end.items() if last), (done, end)

    return check


def _only(nodes: list[RedisNode]) -> RedisNode:
    assert len(nodes) == 1, nodes
    return nodes[0]


def _reads_state(reader: Reader, state: int) -> Callable[[], None]:
    """A check that passes once ``reader`` read ``state`` (see ``state_of``)."""

    def check() -> None:
        reader.healthy()
        assert reader.state == state, f"state {reader.state} read, waiting for {state}"

    return check


def _more_reads(reader: Reader, more: int) -> Callable[[], None]:
    """A check that passes once ``reader`` made ``more`` reads after this call."""
    target = reader.reads + more

    def check() -> None:
        reader.healthy()
        assert reader.reads >= target

    return check


@pytest.mark.slow  # about three minutes (a cluster failover, a consumer SIGKILL): make test-slow
def test_groups_are_read_whole_through_a_consumer_crash_and_a_lossy_failover(
    cluster: LocalRedisCluster, kafka: str, topic: str, unique: str, tmp_path: Path
) -> None:
    url = cluster.every_node_url
    store = RedisStore.connect(url, load_functions=True)
    spec = CollectionSpec(f"gens-{unique}", SCHEMA, ("replica_id",), buckets=BUCKETS)
    store.create_collection(spec)

    def owner(unit: CollectionSpec) -> RedisNode:
        return cluster.slot_owner(key_slot(CollectionKeys(unit.name).contents.encode()))

    assert len({owner(unit) for unit in spec.units()}) == 3, "buckets on every primary"
    # The primary to fail: one holding buckets, not the settled cut.
    settled_on = cluster.slot_owner(key_slot(cut_key(spec.name).encode()))
    lost = next(unit.name for unit in spec.units() if owner(unit) != settled_on)
    env = consumer_env(kafka, url, topic, tmp_path) | CONSUMER
    log = tmp_path / "consumer.log"

    with Reader(store, spec.name) as reader, Writer(kafka, topic, spec, reader) as writer:
        consumer = start_consumer(env, log)

        def beyond(g: int) -> int:
            """Waits until a read shows a generation past ``g``; fails at once when a read
            failed its check or the consumer ended."""

            def check() -> int:
                reader.healthy()
                assert consumer.poll() is None, log.read_text()[-3000:]
                assert reader.latest > g, f"generation {reader.latest} read, waiting for > {g}"
                return reader.latest

            return assert_eventually(check, timeout=180, interval=0.1)

        began = time.monotonic()
        beyond(2)
        print(f"\nconsumer applying {time.monotonic() - began:.1f} s after its start")

        # 1. The consumer dies mid-run (JVM and Python workers with it) and starts again.
        time.sleep(random.uniform(0.2, 2.0))
        kill(consumer)
        seen, began = reader.latest, time.monotonic()
        consumer = start_consumer(env, log)
        beyond(seen + 2)
        print(f"consumer SIGKILLed: applying again {time.monotonic() - began:.1f} s after")

        # 2. A primary takes parts its replica never gets (cut off behind a write larger
        # than the sockets between them hold), then dies, and the replica takes over. The
        # consumer is idle first, every batch recorded: the next one, which the barrier
        # refuses (and Spark then runs again), applies new parts after the cut.
        last = writer.pause()
        assert_eventually(_reads_state(reader, 2 * last), timeout=180, interval=0.1)
        assert_eventually(_recorded_all(kafka, topic, url), timeout=120, interval=0.2)
        slot = key_slot(CollectionKeys(lost).contents.encode())
        primary = cluster.slot_owner(slot)
        replica = assert_eventually(lambda: _only(cluster.replicas_of(primary)), timeout=60)
        junk = f"test-bucket-cuts-junk:{{{unit_tag(lost)}}}"  # on the same primary
        os.kill(replica.pid, signal.SIGSTOP)
        try:
            with redis.Redis(port=primary.port) as direct:
                direct.set(junk, b"x" * (96 << 20))
            writer.pause(False)
            seen = beyond(last)  # applied, on the primary alone
            time.sleep(1.0)  # the consumer's settle rounds meanwhile must not settle them
            reader.may_go_back = True
            cluster.kill(primary)
            began = time.monotonic()
        finally:
            os.kill(replica.pid, signal.SIGCONT)
        promoted = cluster.wait_promoted(primary, slot)
        print(f"Redis failover: a replica serves the slot {time.monotonic() - began:.1f} s after")
        with redis.Redis(port=promoted.port) as direct:
            assert not direct.exists(junk), "the promoted replica lost nothing"
        assert_eventually(_more_reads(reader, 2), timeout=120)  # one begun after it
        reader.may_go_back = False
        cluster.restart(primary)  # back as a replica: the consumer's barrier waits for one
        beyond(seen)
        print(f"Redis failover: applying again {time.monotonic() - began:.1f} s after")

        last = writer.stop()
        expected = generation(last)
        beyond(last - 1)

        def caught_up() -> None:
            assert store.snapshot(spec.name).rows == expected

        assert_eventually(caught_up, timeout=60, interval=0.2)
    reader.healthy()
    print(f"{reader.reads} reads checked, {reader.retried} read again, {reader.went_back} "
          f"went back at the failover")  # fmt: skip
    kill(consumer)

    assert store.reader.read_buckets(spec.name).rows == expected
    assert store.stepped_snapshot(spec.name).rows == expected
    # Each bucket counted each of its parts once: no replay applied one twice.
    counted = [store.stats(unit.name).get("requests", 0) for unit in spec.units()]
    assert counted == writer.parts
    store.drop_collection(spec.name)
