"""End to end: sustained throughput and publish-to-visible latency, Spark vs a plain loop.

One offered load runs through (1) the Spark consumer (``start_consumer``, 500 ms trigger,
``local[2]``) and (2) the no-Spark baseline (``spark_consumers.plain_loop``: one process,
a confluent-kafka poll loop, the same decode and store code), one after the other in one
run, each on its own fresh 4-partition topic and fresh (renamed) collections.

Load: the five introspection collections churn like a live replica's introspection data.
Each holds ``--keys`` rows per replica (three replicas), inserted first (the seed, which
also warms the consumer up and is not measured); every later ``Append`` updates
``--updates / 2`` of them (retracts the old version, inserts the new), so it carries
``--updates`` updates. Requests go round-robin over replica x collection, keyed by
collection, sent by one thread on a schedule of ``--rate`` updates/s for ``--duration`` s
(encoded beforehand, so sending is all it does). Offered is what was actually sent: n
requests over the time from the first send to one schedule slot after the last.

Latency: every ``--probe-every``-th request also inserts a unique probe row (replica
``probe``, key = its sequence number). Its publish time is read just before ``produce``.
A watcher thread asks Redis every 10 ms, in one pipeline of ``HEXISTS``, whether each
pending probe's canonical row is in its collection's contents hash; the first reply that
shows it gives the visible time (late by at most one poll). p50/p99 over all probes.

Throughput: the watcher samples the collections' ``requests`` counters, which the apply
script bumps in the same atomic step as the data. Applied is the rate over the steady
part of the load (after its first fifth, until the last send); lag is what was sent but
not applied at the last send; drain is the time from the last send until every request
was applied (about one trigger or poll when the consumer keeps up). Busy is the share of
the wall time from the first send until drained spent in batches (Spark: the sum of
``triggerExecution``; baseline: decode + apply + commit): near 100% with a growing lag
means saturated, though Spark's batches have a fixed cost (scheduling, checkpoint), so
its share is not proportional to the load. While both keep up, both apply what is
offered: the Spark/baseline ratio compares capacities only when one of them lags.
The JSON adds each phase's seconds and batch count, the CPU seconds Redis and the whole
machine used, and the updates written after request groups were consolidated (``--keys``
sets how soon a row is updated again, so how much a group cancels: little by default).

Collection names are chosen so that both runs place the five collections alike (two on
partition 0, one on each other): Spark's batch time follows its busiest partition.
Anything else using the same Kafka, Redis or CPUs distorts the figures; with
``CM_STATE_DIR`` set to a fresh directory the run starts (and stops) its own services.

Run: ``.venv/bin/python -m bench.e2e [--rate 50000] [--duration 30] [--updates 500]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import multiprocessing
import os
import queue
import statistics
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Message as KafkaMessage
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console

from bench.common import report, services
from bench.targets import E2E_P99_MS, E2E_RATE, E2E_SPARK_SHARE
from collection_manager.config import ConsumerConfig, InfraConfig, SparkConfig, from_env
from collection_manager.infra import Endpoints
from collection_manager.requests import Append, Update
from collection_manager.specs import CollectionSpec, Value
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.ops import double_positions
from collection_manager.storage.rows import encode_row
from collection_manager.storage.store import RedisStore
from producers.kafka_producer import DeliveryCallback, KafkaProducer, ProducerConfig
from producers.partitioning import java_partition as partition_of
from schemas.codec import encode_request
from schemas.introspection import introspection_specs
from spark_consumers import plain_loop
from spark_consumers.job import start_consumer
from spark_consumers.session import build_spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

PARTITIONS = 4
REPLICAS = ("r0", "r1", "r2")
POLL_S = 0.01  # how often the watcher looks for probes: the latency's resolution
SAMPLE_S = 0.2  # how often it samples the applied-request counters
SEED_TIMEOUT_S = 180.0  # the seed also waits for Spark's first batches (Python workers)
TARGET_RATE = E2E_RATE.bound
TARGET_P99_MS = E2E_P99_MS.bound
TARGET_SHARE = E2E_SPARK_SHARE.bound

Phases = Callable[[], dict[str, float]]
ConsumerFactory = Callable[[str], AbstractContextManager[Phases]]


@dataclasses.dataclass(frozen=True)
class Probe:
    """A unique row whose arrival in ``contents_key`` (as hash field ``field``) is watched."""

    seq: int
    contents_key: str
    field: str


@dataclasses.dataclass(frozen=True)
class Message:
    """One encoded request, ready to send."""

    key: bytes
    value: bytes
    updates: int
    probe: Probe | None = None


def _value(kind: str, n: int) -> Value:
    if kind == "string":
        return f"v{n}"
    if kind == "double":
        return n + 0.5
    if kind == "boolean":
        return n % 2 == 0
    return n


def row_of(spec: CollectionSpec, replica: str, key: int, version: int) -> tuple[Value, ...]:
    """A row of ``spec``: ``key`` in the column after ``replica_id``, ``version`` in the rest."""
    columns = spec.columns
    return (replica, _value(columns[1].type, key), *(_value(c.type, version) for c in columns[2:]))


class Churn:
    """Appends that keep ``keys`` rows per replica in each collection and update them."""

    def __init__(self, specs: Sequence[CollectionSpec], keys: int, updates: int) -> None:
        self.specs = specs
        self.keys = keys
        self.half = updates // 2
        self.versions = {(s.name, r): [0] * keys for s in specs for r in REPLICAS}
        self.cursors = dict.fromkeys(self.versions, 0)

    def seed(self) -> list[Append]:
        """Inserts of every row at version 0, ``2 * half`` per request."""
        out = []
        for spec in self.specs:
            for replica in REPLICAS:
                for first in range(0, self.keys, 2 * self.half):
                    keys = range(first, min(first + 2 * self.half, self.keys))
                    rows = [(row_of(spec, replica, k, 0), 1) for k in keys]
                    out.append(Append(spec.name, replica, 1, tuple(rows), produced_at=0))
        return out

    def update(self, spec: CollectionSpec, replica: str, extra: Sequence[Update] = ()) -> Append:
        """The next ``half`` rows of ``replica`` retracted and re-inserted one version on."""
        versions = self.versions[spec.name, replica]
        cursor = self.cursors[spec.name, replica]
        updates: list[Update] = []
        for j in range(self.half):
            key = (cursor + j) % self.keys
            version = versions[key]
            updates.append((row_of(spec, replica, key, version), -1))
            updates.append((row_of(spec, replica, key, version + 1), 1))
            versions[key] = version + 1
        self.cursors[spec.name, replica] = (cursor + self.half) % self.keys
        return Append(spec.name, replica, 1, (*updates, *extra), produced_at=0)


def _message(request: Append, probe: Probe | None = None) -> Message:
    return Message(
        request.collection.encode(), encode_request(request), len(request.updates), probe
    )


def workload(
    specs: Sequence[CollectionSpec], args: argparse.Namespace
) -> tuple[list[Message], list[Message]]:
    """The encoded seed and load requests."""
    churn = Churn(specs, args.keys, args.updates)
    seed = [_message(request) for request in churn.seed()]
    # Replica-major, so consecutive requests go to different collections (and partitions).
    pairs = [(spec, replica) for replica in REPLICAS for spec in specs]
    load = []
    for n in range(round(args.rate * args.duration / args.updates)):
        spec, replica = pairs[n % len(pairs)]
        if n % args.probe_every:
            load.append(_message(churn.update(spec, replica)))
            continue
        row = row_of(spec, "probe", n, 0)
        probe = Probe(
            n, CollectionKeys(spec.name).contents, encode_row(row, double_positions(spec))
        )
        load.append(_message(churn.update(spec, replica, [(row, 1)]), probe))
    return seed, load


class Watcher(threading.Thread):
    """Polls Redis: when each published probe became visible, and how much was applied."""

    def __init__(self, redis_url: str, collections: Sequence[str]) -> None:
        super().__init__(name="e2e-watcher", daemon=True)
        self.client = redis.Redis.from_url(redis_url)
        self.stats_keys = [CollectionKeys(name).stats for name in collections]
        self.published: queue.SimpleQueue[tuple[Probe, float]] = queue.SimpleQueue()
        self.pending: dict[Probe, float] = {}
        self.latencies_s: list[float] = []
        self.timeline: list[tuple[float, int]] = []  # (monotonic time, requests applied)
        self.stopping = threading.Event()

    def run(self) -> None:
        """Checks probes every ``POLL_S`` and samples the counters every ``SAMPLE_S``."""
        next_sample = 0.0
        while not self.stopping.is_set():
            self.check_probes()
            now = time.monotonic()
            if now >= next_sample:
                self.timeline.append((now, self.applied()))
                next_sample = now + SAMPLE_S
            self.stopping.wait(POLL_S)

    def stop(self) -> None:
        """Stops polling, after one last look for probes."""
        self.stopping.set()
        self.join()
        self.check_probes()

    def check_probes(self) -> None:
        """Records the probes that are visible now."""
        while not self.published.empty():
            probe, published_at = self.published.get()
            self.pending[probe] = published_at
        if not self.pending:
            return
        probes = list(self.pending)
        with self.client.pipeline(transaction=False) as pipe:
            for probe in probes:
                pipe.hexists(probe.contents_key, probe.field)
            seen = pipe.execute()
        now = time.monotonic()
        for probe, visible in zip(probes, seen, strict=True):
            if visible:
                self.latencies_s.append(now - self.pending.pop(probe))

    def applied(self, counter: str = "requests") -> int:
        """A stats counter summed over the watched collections (requests applied so far)."""
        with self.client.pipeline(transaction=False) as pipe:
            for key in self.stats_keys:
                pipe.hget(key, counter)
            return sum(int(value or 0) for value in pipe.execute())


def publish(
    producer: KafkaProducer,
    topic: str,
    messages: Sequence[Message],
    rate: float,
    watcher: Watcher | None = None,
    on_delivery: DeliveryCallback | None = None,
) -> tuple[float, float]:
    """Sends ``messages`` on a schedule of ``rate`` requests/s; returns (start, last send).

    A send that falls behind its slot goes at once, so the schedule is caught up with.
    """
    start = last = time.monotonic()
    for i, message in enumerate(messages):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        last = time.monotonic()
        producer.produce(topic, message.key, message.value, on_delivery)
        if watcher is not None and message.probe is not None:
            watcher.published.put((message.probe, last))
    return start, last


def machine_cpu_s() -> float:
    """CPU seconds used so far by every process on this machine, from ``/proc/stat``."""
    with open("/proc/stat") as stat:
        user, nice, system, _idle, _iowait, irq, softirq, steal = stat.readline().split()[1:9]
    ticks = sum(int(t) for t in (user, nice, system, irq, softirq, steal))
    return ticks / os.sysconf("SC_CLK_TCK")


def snapshot(phases: Phases, watcher: Watcher) -> dict[str, float]:
    """The consumer's phase totals, with what Redis and the machine used and what was written.

    ``written`` is the updates the store wrote after consolidation; Redis CPU and the
    machine's CPU show where the load lands (the machine's includes anything else running).
    """
    info = watcher.client.info("cpu")
    return {
        **phases(),
        "redis_cpu": float(info["used_cpu_user"]) + float(info["used_cpu_sys"]),
        "machine_cpu": machine_cpu_s(),
        "written": watcher.applied("updates"),
    }


def wait_applied(watcher: Watcher, expected: int, timeout_s: float) -> float | None:
    """When ``expected`` requests were applied (monotonic), or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if watcher.applied() >= expected:
            return time.monotonic()
        time.sleep(POLL_S)
    return None


@contextmanager
def plain_consumer(endpoints: Endpoints, topic: str) -> Iterator[Phases]:
    """The baseline loop in its own process (spawned: this one has Kafka threads running)."""
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Event(), context.Event()
    timings = context.Array("d", len(plain_loop.TIMINGS), lock=False)
    settings = plain_loop.LoopSettings(
        endpoints.kafka_bootstrap,
        endpoints.redis_url,
        topic,
        group_id=f"{topic}-plain",
        dead_letter_topic=f"{topic}-dead",
    )
    process = context.Process(
        target=plain_loop.run, args=(settings, ready, stop, timings), name="plain-loop"
    )
    process.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the plain loop was assigned no partitions within 60 s")

        def phases() -> dict[str, float]:
            # The loop adds a batch's timings just after its data became visible in Redis.
            time.sleep(2 * settings.poll_timeout_s)
            return dict(zip(plain_loop.TIMINGS, timings, strict=True))

        yield phases
    finally:
        stop.set()
        process.join(30)
        if process.is_alive():
            process.terminate()
            process.join()


def spark_phases(query: StreamingQuery) -> dict[str, float]:
    """Seconds per phase summed over the query's batches so far; busy = triggerExecution.

    Waits for the running batch to end first: its data can be visible in Redis well before
    it reports its progress, and it must be counted whole, on one side of the window.
    """
    deadline = time.monotonic() + 30
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if not query.isActive:
        raise RuntimeError(f"the Spark query stopped: {query.exception()}")
    totals: dict[str, float] = {}
    progress_list = query.recentProgress
    for progress in progress_list:
        for phase, ms in progress.durationMs.items():
            totals[phase] = totals.get(phase, 0.0) + ms / 1000
    totals["busy"] = totals.get("triggerExecution", 0.0)
    totals["batches"] = len(progress_list)
    return totals


@contextmanager
def spark_consumer(
    spark: SparkSession, endpoints: Endpoints, topic: str, trigger_ms: int
) -> Iterator[Phases]:
    """The Spark consumer with a throwaway checkpoint."""
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        config = ConsumerConfig(
            topic=topic,
            dead_letter_topic=f"{topic}-dead",
            checkpoint_dir=str(Path(tmp) / "checkpoint"),
            trigger_interval_ms=trigger_ms,
        )
        query = start_consumer(spark, config, endpoints.kafka_bootstrap, endpoints.redis_url)
        try:
            yield lambda: spark_phases(query)
        finally:
            query.stop()


@dataclasses.dataclass(frozen=True)
class PathResult:
    """What one consumer did with the load."""

    offered: float  # updates/s actually sent
    applied: float  # updates/s applied in the steady window
    lag: int  # requests sent but not applied at the last send
    drain_s: float  # last send -> all applied (inf: not within the timeout)
    latencies_s: list[float]
    unseen: int  # probes never seen
    busy: float  # share of the wall time spent in batches
    window_s: float  # first send -> all applied
    phases: dict[str, float]  # seconds per phase during the load
    placement: dict[str, int] = dataclasses.field(default_factory=dict)  # partitions


def _at(timeline: Sequence[tuple[float, int]], when: float) -> tuple[float, int]:
    # The last sample at or before ``when`` (or the first one).
    return next((s for s in reversed(timeline) if s[0] <= when), timeline[0])


def summarize(
    watcher: Watcher,
    load: Sequence[Message],
    sent: tuple[float, float, float],
    drained: float | None,
    phases: tuple[dict[str, float], dict[str, float]],
) -> PathResult:
    """The figures of one path from what the watcher saw and the phase totals around it."""
    start, last, rate = sent
    per_request = sum(m.updates for m in load) / len(load)
    timeline = watcher.timeline
    t_a, applied_a = _at(timeline, start + (last - start) / 5)
    t_b, applied_b = _at(timeline, last)
    end = time.monotonic() if drained is None else drained
    before, after = phases
    return PathResult(
        offered=len(load) * per_request / (last - start + 1 / rate),
        applied=(applied_b - applied_a) * per_request / max(t_b - t_a, 1e-9),
        lag=timeline[0][1] + len(load) - applied_b,
        drain_s=math.inf if drained is None else drained - last,
        latencies_s=watcher.latencies_s,
        unseen=len(watcher.pending),
        busy=(after["busy"] - before["busy"]) / (end - start),
        window_s=end - start,
        phases={k: round(v - before.get(k, 0.0), 3) for k, v in after.items()},
    )


def measure(
    producer: KafkaProducer,
    topic: str,
    watcher: Watcher,
    messages: tuple[list[Message], list[Message]],
    phases: Phases,
    args: argparse.Namespace,
) -> PathResult:
    """Seeds and warms up the consumer, then offers the load and watches it arrive."""
    seed, load = messages
    placement: dict[str, int] = {}  # which partition each collection landed on

    def placed(error: KafkaError | None, message: KafkaMessage) -> None:
        key, partition = message.key(), message.partition()
        if error is None and key is not None and partition is not None:
            placement[bytes(key).decode().split("-e2e-")[0]] = partition

    publish(producer, topic, seed, math.inf, on_delivery=placed)
    producer.flush()
    if wait_applied(watcher, len(seed), SEED_TIMEOUT_S) is None:
        raise RuntimeError(f"the consumer did not apply the seed within {SEED_TIMEOUT_S} s")
    watcher.timeline.append((time.monotonic(), len(seed)))  # the seed, none of the load
    watcher.start()
    before = snapshot(phases, watcher)
    rate = args.rate / args.updates
    start, last = publish(producer, topic, load, rate, watcher)
    drained = wait_applied(watcher, len(seed) + len(load), args.drain_timeout)
    after = snapshot(phases, watcher)
    watcher.stop()
    result = summarize(watcher, load, (start, last, rate), drained, (before, after))
    return dataclasses.replace(result, placement=placement)


def java_partition(key: bytes, partitions: int = PARTITIONS) -> int:
    """The partition of a keyed message on the benchmark's topics."""
    return partition_of(key, partitions)


def spread_name(base: str, partition: int) -> str:
    """``base`` with the first suffix that lands it on ``partition``.

    Random names would put the five collections on the four partitions differently in
    every run (sometimes on two of them), and Spark's batch time follows its busiest
    partition; fixed placement (two on partition 0, one on each other) keeps runs alike.
    """
    return next(
        name for n in range(10_000) if java_partition((name := f"{base}-{n}").encode()) == partition
    )


def run_path(
    label: str, consumer: ConsumerFactory, endpoints: Endpoints, args: argparse.Namespace
) -> PathResult:
    """One consumer on a fresh topic and fresh collections, which are removed after."""
    token = f"{label}-{uuid.uuid4().hex[:8]}"
    topic = f"bench-e2e-{token}"
    specs = [
        dataclasses.replace(spec, name=spread_name(f"{spec.name}-e2e-{token}", i % PARTITIONS))
        for i, spec in enumerate(introspection_specs())
    ]
    admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    store = RedisStore.connect(endpoints.redis_url)
    for spec in specs:
        store.create_collection(spec)
    producer = KafkaProducer(ProducerConfig(endpoints.kafka_bootstrap, client_id="bench-e2e"))
    watcher = Watcher(endpoints.redis_url, [spec.name for spec in specs])
    try:
        messages = workload(specs, args)
        with consumer(topic) as phases:
            return measure(producer, topic, watcher, messages, phases, args)
    finally:
        watcher.stopping.set()  # when measure failed before stopping it
        producer.close()
        for spec in specs:
            store.drop_collection(spec.name)
        for deleted in admin.delete_topics([topic, f"{topic}-dead"]).values():
            with contextlib.suppress(KafkaException):  # the dead-letter topic may not exist
                deleted.result(30)


def _quantile_ms(latencies_s: Sequence[float], q: int) -> float:
    if len(latencies_s) < 2:
        return math.nan
    return statistics.quantiles(latencies_s, n=100, method="inclusive")[q - 1] * 1000


def _row(name: str, r: dict[str, Any]) -> list[Any]:
    keys = ("offered", "applied", "p50_ms", "p99_ms", "max_ms", "lag", "drain_s")
    return [name, *(r[key] for key in keys), r["busy"] * 100]


def _targets(spark: PathResult, plain: PathResult, trigger_ms: int) -> list[str]:
    def verdict(ok: bool) -> str:
        return "met" if ok else "MISSED"

    p99 = _quantile_ms(spark.latencies_s, 99)
    share = spark.applied / plain.applied
    kept_up = both_kept_up(spark, plain, trigger_ms)
    return [
        f"sustained >= {TARGET_RATE:,} updates/s: Spark applied {spark.applied:,.0f} at an "
        f"offered {spark.offered:,.0f}: {verdict(spark.applied >= TARGET_RATE)}",
        f"p99 <= {TARGET_P99_MS:,} ms at a {trigger_ms} ms trigger: {p99:,.0f} ms: "
        f"{verdict(p99 <= TARGET_P99_MS)}",
        f"Spark >= {TARGET_SHARE:.0%} of the baseline: {share:.0%}: "
        f"{verdict(share >= TARGET_SHARE)}"
        + (" (both kept up: raise --rate to compare capacities)" if kept_up else ""),
    ]


def both_kept_up(spark: PathResult, plain: PathResult, trigger_ms: int) -> bool:
    """While both keep up, both apply what is offered: the ratio says nothing of capacity."""
    return max(spark.drain_s, plain.drain_s) <= 2 * trigger_ms / 1000


def path_figures(r: PathResult) -> dict[str, Any]:
    """One path's figures as plain values (latencies sorted, in ms)."""
    return {
        "offered": r.offered,
        "applied": r.applied,
        "p50_ms": _quantile_ms(r.latencies_s, 50),
        "p99_ms": _quantile_ms(r.latencies_s, 99),
        "max_ms": max(r.latencies_s, default=math.nan) * 1000,
        "lag": r.lag,
        "drain_s": r.drain_s,
        "busy": r.busy,
        "probes": len(r.latencies_s),
        "unseen_probes": r.unseen,
        "phases_s": r.phases,
        "partition_of_collection": r.placement,
        "machine_cpu_share": r.phases["machine_cpu"] / r.window_s / (os.cpu_count() or 1),
        "latencies_ms": sorted(round(s * 1000, 1) for s in r.latencies_s),
    }


def _report(result: dict[str, Any], args: argparse.Namespace) -> None:
    paths = result["paths"]
    spark = _row("Spark", paths["spark"])
    plain = _row("baseline", paths["plain"])
    ratio = [
        "Spark/baseline",
        *(s / p if p else math.nan for s, p in zip(spark[1:], plain[1:], strict=True)),
    ]
    columns = [
        "consumer", "offered/s", "applied/s", "p50 ms", "p99 ms", "max ms", "lag req",
        "drain s", "busy %",
    ]  # fmt: skip
    extra_keys = ("probes", "unseen_probes", "phases_s", "partition_of_collection")
    report(
        "e2e",
        columns,
        [spark, plain, ratio],
        {
            "settings": vars(args),
            **{key: {k: r[key] for k, r in paths.items()} for key in extra_keys},
            "machine_cpu_share": {k: r["machine_cpu_share"] for k, r in paths.items()},
            "targets": result["targets"],
        },
    )
    console = Console()
    console.print("Targets (printed, not asserted):")
    for line in result["targets"]:
        console.print(f"  {line}")


def parser() -> argparse.ArgumentParser:
    """The benchmark's load and scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=50_000, help="offered updates/s")
    parser.add_argument("--duration", type=float, default=30, help="seconds of load")
    parser.add_argument("--updates", type=int, default=500, help="updates per request (even)")
    parser.add_argument(
        "--keys",
        type=int,
        default=5_000,
        help="rows per replica and collection: how soon a row is updated again, so how "
        "much a request group can consolidate away (little, at the default)",
    )
    parser.add_argument("--probe-every", type=int, default=4, help="requests per probe")
    parser.add_argument("--trigger-ms", type=int, default=500)
    parser.add_argument("--drain-timeout", type=float, default=60, help="seconds")
    parser.add_argument(
        "--master", default=os.environ.get("CM_SPARK_MASTER", "local[2]"), help="Spark master"
    )
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both paths under the same load: their figures, and the targets as printed lines."""
    results: dict[str, PathResult] = {}
    with services() as endpoints:
        results["plain"] = run_path(
            "plain", lambda topic: plain_consumer(endpoints, topic), endpoints, args
        )
        config = dataclasses.replace(from_env(SparkConfig), spark_master=args.master)
        spark = build_spark_session(config, from_env(InfraConfig), "bench-e2e")
        # Every batch's durations are summed for the busy share; keep them all.
        spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
        results["spark"] = run_path(
            "spark",
            lambda topic: spark_consumer(spark, endpoints, topic, args.trigger_ms),
            endpoints,
            args,
        )
    return {
        "paths": {name: path_figures(r) for name, r in results.items()},
        "both_kept_up": both_kept_up(results["spark"], results["plain"], args.trigger_ms),
        "targets": _targets(results["spark"], results["plain"], args.trigger_ms),
    }


def main() -> None:
    args = parser().parse_args()
    _report(run(args), args)


if __name__ == "__main__":
    main()
