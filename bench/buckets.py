"""Buckets: one collection of 1, 4 and 16 buckets on a Redis Cluster of three primaries.

Each bucket count (``--bucket-counts``) gets a fresh collection of ``--schema`` bucketed
by ``replica_id`` (the 1-bucket collection is the baseline: one unit, so one hash slot,
one primary and one Kafka key), a fresh topic of ``--partitions`` partitions, and the
same load, one count after the other in one run, on one local Redis Cluster of
``--masters`` primaries (``devservices/redis_cluster.py``) and one Spark session on
``--master``. The consumer is ``start_consumer`` as the other end-to-end benchmarks run
it, supervised as ``consume`` supervises it (``spark_consumers.query_watch.watch``: its timer
settles the cuts of bucketed collections about twice a second and records the progress).

Load: ``--replicas`` simulated replicas, each keeping ``--keys`` rows and sending appends
of ``--updates`` updates (half of its rows retracted and re-inserted one version on, as
``bench.e2e``'s churn), round-robin over the replicas at ``--rate`` updates/s for
``--duration`` s after a seed that inserts every row (unmeasured; it warms the consumer
up). Every request is routed as the agents route theirs (``core/routing.py``): keyed
``<collection>#<bucket>``, split by bucket and produced to its bucket's partition, assigned
as ``collections create`` assigns them (``core/partitions.py``; ``--key-hash``: none, the
keys' hash places the buckets, as for a collection created before assignments). Every
``--probe-every``-th request also inserts a probe row of its replica (publish-to-visible
latency, as ``bench.e2e``, the watcher asking about each unit's oldest pending probes only:
``ProbeWatcher``). Agents write requests of one bucket only (a replica's rows all lie in
its bucket), and so do the runs of ``--bucket-counts``; those of ``--grouped-counts`` run
again with every ``--grouped-every``-th request also inserting a row of another replica: a
request of two buckets' rows, sent as a group of two parts, which a consistent cut holds
whole or not at all (the same collection and the same placement as the run without).

Printed per bucket count: offered and applied rate (the steady window, as ``bench.e2e``),
publish-to-visible p50/p99, CPU seconds per million updates applied, of every process
(``bench/cpu.py``: the broker, Redis's nodes, this process with the producer, the probe
watcher, the cut sampler and Spark's driver, Spark's JVM and Python workers), the Redis
commands each primary ran during the load (``INFO commandstats`` deltas, the calls inside
functions included; the probe watcher's ``HEXISTS`` polls, which it counts, taken out; the
cut sampler's reads and the watcher's counter reads left in), the busiest primary's share
against an even split (and the same for the time inside ``FCALL``, the consumer's applies),
and how far the consistent cut trails the freshest bucket: every ``--cut-every-ms`` a
sampler reads each bucket's latest time, then ``RedisStore.cut()``, then the latest times
again; per cut, the most any bucket is ahead of it in times, and the longest any bucket
has been past it in ms: exact for a bucket the cut holds back for a group (its next time
is a part, whose bucket records when it was applied), else an upper bound (from the last
reading that still had the bucket at or below the cut: about the read's own time). p50/p99
over the cuts read during the load. Each sample also times the cut read both ways, in turn
first: as ``RedisStore.cut()`` reads it (one pipeline per primary) and as it was read before,
one call per bucket (``bench/cut_reads.py``), the baseline, under the same load.

Figures are from whatever machine runs it; on a shared 2-core machine they are noisy.
Run: ``.venv/bin/python -m bench.buckets [--bucket-counts 1,4,16,64] [--duration 30]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import os
import tempfile
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis
from confluent_kafka import KafkaError
from confluent_kafka import Message as KafkaMessage
from redis.crc import key_slot
from rich.console import Console

from bench.bucket_figures import (
    BASELINE_BUCKETS,
    buckets_details,
    busiest_share,
    cut_trail,
    label,
    quantile,
)
from bench.capacity import step_figures
from bench.common import report, services
from bench.cut_reads import per_bucket_cut
from bench.e2e import SEED_TIMEOUT_S, scratch_topic, summarize
from bench.e2e_paths import (
    Phases,
    Watcher,
    bench_session,
    publish,
    snapshot,
    spark_phases,
    wait_applied,
)
from bench.e2e_workload import Churn, Message, Probe, row_of
from collection_manager.config import ConsumerConfig, ReplicaConfig, from_env
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import CutError, Part
from collection_manager.core.partitions import assign
from collection_manager.core.requests import Append, Update
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices import Endpoints
from collection_manager.devservices.processes import LOOPBACK
from collection_manager.devservices.redis_cluster import LocalRedisCluster, RedisNode
from collection_manager.devservices.redis_cluster import start_cluster as start_redis_cluster
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.client import as_text, redis_client
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.ops import double_positions
from collection_manager.storage.rows import encode_row
from collection_manager.storage.store import RedisStore
from producers.routing import key_for, partition_for
from schemas.codec import encode_request
from schemas.introspection import introspection_spec
from spark_consumers.job import start_consumer
from spark_consumers.query_watch import QuerySupervision, watch
from spark_consumers.row_ttl.retraction_timer import RetractionTimer

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

SHARED_MACHINE = "figures from a shared 2-core machine: noisy, compare within one run"


# --- the load ---------------------------------------------------------------------------


def replica_ids(count: int) -> tuple[str, ...]:
    """The simulated replicas' ids: ``r0``, ``r1``, ... (CRC-32 spreads 256 of them over 16
    buckets within 15 to 18 each)."""
    return tuple(f"r{i}" for i in range(count))


def unit_of(spec: CollectionSpec, replica: str) -> str:
    """The storage unit a replica's rows live in."""
    bucket = None if spec.buckets == 1 else bucket_of(replica, spec.buckets)
    return spec.unit(bucket).name


def _messages(
    spec: CollectionSpec, request: Append, probe: Probe | None = None, probe_unit: str = ""
) -> list[Message]:
    """``request`` routed as the agents route it (``core/routing.py``): one message per
    bucket part, keyed by its unit; the probe goes with the part of ``probe_unit``, where
    its row lies; each to its bucket's partition when assigned."""
    out = []
    for part in route_append(request, spec):
        key = key_for(part)
        holds = probe if key.decode() == probe_unit else None
        placed = partition_for(part, spec)
        out.append(Message(key, encode_request(part), len(part.updates), holds, placed))
    return out


def workload(
    spec: CollectionSpec, args: argparse.Namespace, grouped_every: int = 0
) -> tuple[list[Message], list[Message]]:
    """The encoded seed and load messages (see the module's docstring); every
    ``grouped_every``-th request also writes a row of another replica (0: none)."""
    replicas = replica_ids(args.replicas)
    churn = Churn([spec], args.keys, args.updates, replicas)
    seed = [m for request in churn.seed() for m in _messages(spec, request)]
    doubles = double_positions(spec)
    load: list[Message] = []
    for n in range(round(args.rate * args.duration / args.updates)):
        replica = replicas[n % len(replicas)]
        extra: list[Update] = []
        probe = None
        unit = unit_of(spec, replica)  # a unit's name is its requests' key
        if n % args.probe_every == 0:
            row = row_of(spec, replica, args.keys + n, 0)  # a key no churned row has
            probe = Probe(n, CollectionKeys(unit).contents, encode_row(row, doubles))
            extra.append((row, 1))
        if grouped_every and n % grouped_every == grouped_every // 2:
            other = replicas[(n + len(replicas) // 2) % len(replicas)]
            extra.append((row_of(spec, other, args.keys + n, 0), 1))
        load += _messages(spec, churn.update(spec, replica, extra), probe, unit)
    return seed, load


# --- what Redis's primaries did -----------------------------------------------------------


# How many of a unit's oldest pending probes the watcher asks about per poll.
PROBES_PER_UNIT = 8


class ProbeWatcher(Watcher):
    """``bench.e2e``'s watcher, asking only about each unit's oldest pending probes, and
    counting the ``HEXISTS`` it sends per contents hash (this benchmark's polls, left out of
    the commands per primary).

    A unit's requests share a partition and are applied in order, so a probe is never
    visible before an older one of its unit: asking about the oldest ``PROBES_PER_UNIT``
    of each unit finds every probe as e2e's watcher does (one poll later when more than
    that became visible at once), while e2e's asks about every pending probe every poll,
    and in this process, beside Spark's driver, that work grew with the latency it measured.
    """

    def __init__(self, redis_url: str, collections: Sequence[str]) -> None:
        super().__init__(redis_url, collections)
        self.polls: Counter[str] = Counter()

    def check_probes(self) -> None:
        """Records the probes that are visible now, asking about each unit's oldest."""
        while not self.published.empty():
            probe, published_at = self.published.get()
            self.pending[probe] = published_at
        oldest: dict[str, list[Probe]] = {}
        for probe in self.pending:  # in the order they were published
            queue = oldest.setdefault(probe.contents_key, [])
            if len(queue) < PROBES_PER_UNIT:
                queue.append(probe)
        probes = [probe for queue in oldest.values() for probe in queue]
        if not probes:
            return
        self.polls.update(probe.contents_key for probe in probes)
        with self.client.pipeline(transaction=False) as pipe:
            for probe in probes:
                pipe.hexists(probe.contents_key, probe.field)
            seen = pipe.execute()
        now = time.monotonic()
        for probe, visible in zip(probes, seen, strict=True):
            if visible:
                self.latencies_s.append(now - self.pending.pop(probe))


def node_counters(nodes: Sequence[RedisNode]) -> list[dict[str, Any]]:
    """Per primary: its commands so far by name (``INFO commandstats``), and its CPU."""
    out = []
    for node in nodes:
        with redis.Redis(host=LOOPBACK, port=node.port, socket_timeout=30) as client:
            stats = client.info("commandstats")
            cpu = client.info("cpu")
        out.append(
            {
                "calls": {name.removeprefix("cmdstat_"): v["calls"] for name, v in stats.items()},
                "usec": {name.removeprefix("cmdstat_"): v["usec"] for name, v in stats.items()},
                "cpu_s": float(cpu["used_cpu_user"]) + float(cpu["used_cpu_sys"]),
            }
        )
    return out


def node_deltas(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]], polls: Sequence[int]
) -> list[dict[str, Any]]:
    """Per primary: commands (all, and without the benchmark's ``polls`` of probes),
    ``FCALL`` calls and ms (the consumer's applies), CPU seconds and the commands by name,
    between two ``node_counters``."""
    out = []
    for b, a, polled in zip(before, after, polls, strict=True):
        calls = {k: v - b["calls"].get(k, 0) for k, v in a["calls"].items()}
        calls = {k: v for k, v in sorted(calls.items(), key=lambda kv: -kv[1]) if v}
        fcall_usec = a["usec"].get("fcall", 0) - b["usec"].get("fcall", 0)
        out.append(
            {
                "commands": sum(calls.values()) - polled,
                "all_commands": sum(calls.values()),
                "probe_polls": polled,
                "fcalls": calls.get("fcall", 0),
                "fcall_ms": fcall_usec / 1000,
                "cpu_s": a["cpu_s"] - b["cpu_s"],
                "by_command": calls,
            }
        )
    return out


def placement(cluster: LocalRedisCluster, spec: CollectionSpec) -> dict[int, int]:
    """Port of each primary -> how many of the collection's units it serves."""
    counts = {node.port: 0 for node in cluster.nodes}
    for unit in spec.units():
        slot = key_slot(CollectionKeys(unit.name).contents.encode())
        counts[cluster.slot_owner(slot).port] += 1
    return counts


# --- the cut, sampled -----------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class CutSample:
    """One cut read during the load, and the buckets' latest times read right after."""

    at: float  # monotonic, when the latest times were read
    trail_times: int
    trail_ms: float
    read_ms: float  # how long RedisStore.cut() took: a pipeline per primary
    per_bucket_ms: float  # the same cut read with one call per bucket (the baseline)
    held: int  # buckets the cut held back for a group (their trail in ms is exact)


class CutSampler(threading.Thread):
    """Reads the collection's consistent cut every ``every_s`` against each bucket's latest
    time (see the module's docstring); counts its own CPU time."""

    def __init__(self, redis_url: str, spec: CollectionSpec, every_s: float) -> None:
        super().__init__(name="cut-sampler", daemon=True)
        self.store = RedisStore.connect(redis_url)
        self.client = redis_client(redis_url)
        self.spec = spec
        self.collection = spec.collection
        self.time_keys = [CollectionKeys(unit.name).time for unit in spec.units()]
        self.parts_keys = [CollectionKeys(unit.name).parts for unit in spec.units()]
        self.every_s = every_s
        self.history: list[tuple[float, tuple[int, ...]]] = []
        self.samples: list[CutSample] = []
        self.errors: list[str] = []
        self.cpu_s = 0.0
        self.stopping = threading.Event()

    def latest(self) -> tuple[float, tuple[int, ...]]:
        """(when asked, each bucket's latest time)."""
        at = time.monotonic()
        with self.client.pipeline(transaction=False) as pipe:
            for key in self.time_keys:
                pipe.get(key)
            return at, tuple(int(value or 0) for value in pipe.execute())

    def run(self) -> None:
        started = time.thread_time()
        try:
            while not self.stopping.is_set():
                self.sample()
                self.stopping.wait(self.every_s)
        finally:
            self.cpu_s = time.thread_time() - started

    def sample(self) -> None:
        """One cut and the latest times before and after it; then (or first, every other
        sample) the same read with one call per bucket, timed alone."""
        baseline_first = len(self.samples) % 2 == 1
        try:
            per_bucket_ms = self.per_bucket_ms() if baseline_first else math.nan
            self.history.append(self.latest())
            began = time.monotonic()
            cut = self.store.cut(self.collection)
            read_ms = (time.monotonic() - began) * 1000
            at, latest = self.latest()
            if not baseline_first:
                per_bucket_ms = self.per_bucket_ms()
        except CutError as exc:
            self.errors.append(str(exc))
            return
        self.history.append((at, latest))
        known = self.passed_ms(cut.times, latest)
        times, ms = cut_trail(self.history, cut.times, latest, at, known)
        self.samples.append(CutSample(at, times, ms, read_ms, per_bucket_ms, len(known)))

    def per_bucket_ms(self) -> float:
        """How long the cut takes read with one call per bucket (``bench/cut_reads.py``)."""
        began = time.monotonic()
        per_bucket_cut(self.client, self.spec)
        return (time.monotonic() - began) * 1000

    def passed_ms(self, cut: Sequence[int], latest: Sequence[int]) -> dict[int, float]:
        """Per bucket ahead of the cut whose next time is a part of a group (the cut holds
        it back for that group): how long ago that part was applied (ms, the consumer's
        record of it in the bucket's parts)."""
        ahead = [b for b, (at, now) in enumerate(zip(cut, latest, strict=True)) if now > at]
        if not ahead:
            return {}
        with self.client.pipeline(transaction=False) as pipe:
            for b in ahead:
                pipe.zrangebyscore(self.parts_keys[b], cut[b] + 1, cut[b] + 1)
            found = pipe.execute()
        now_ms = time.time() * 1000
        return {
            b: now_ms - Part.parse(as_text(members[0]), cut[b] + 1).applied_ms
            for b, members in zip(ahead, found, strict=True)
            if members
        }

    def stop(self) -> None:
        self.stopping.set()
        self.join()


def cut_figures(sampler: CutSampler, start: float, end: float) -> dict[str, Any]:
    """p50/p99 of the cuts read between ``start`` and ``end`` (monotonic)."""
    inside = [s for s in sampler.samples if start <= s.at <= end]
    figures: dict[str, Any] = {"samples": len(inside), "errors": len(sampler.errors)}
    for name, values in (
        ("trail_times", [float(s.trail_times) for s in inside]),
        ("trail_ms", [s.trail_ms for s in inside]),
        ("read_ms", [s.read_ms for s in inside]),
        ("per_bucket_ms", [s.per_bucket_ms for s in inside]),
    ):
        figures[f"{name}_p50"] = quantile(values, 50)
        figures[f"{name}_p99"] = quantile(values, 99)
        figures[f"{name}_max"] = max(values, default=math.nan)
    figures["at_latest"] = sum(s.trail_times == 0 for s in inside)
    figures["held_back"] = sum(s.held > 0 for s in inside)
    figures["sampler_cpu_s"] = sampler.cpu_s
    figures["first_errors"] = sampler.errors[:3]
    return figures


# --- the consumer ---------------------------------------------------------------------------


@contextmanager
def supervised_consumer(
    spark: SparkSession, endpoints: Endpoints, topic: str, trigger_ms: int
) -> Iterator[Phases]:
    """The Spark consumer (``start_consumer``, a throwaway checkpoint) with ``consume``'s
    supervision in a thread (``watch``: the timer that settles cuts, the progress record)."""
    with tempfile.TemporaryDirectory(prefix="bench-buckets-") as tmp:
        config = ConsumerConfig(
            topic=topic,
            dead_letter_topic=f"{topic}-dead",
            checkpoint_dir=str(Path(tmp) / "checkpoint"),
            trigger_interval_ms=trigger_ms,
        )
        query = start_consumer(
            spark,
            config,
            endpoints.kafka_bootstrap,
            endpoints.redis_url,
            replica_namespace=from_env(ReplicaConfig).replica_namespace,
        )
        timer = RetractionTimer(
            RedisStore.connect(endpoints.redis_url), config.expiration_offset_ms, topic
        )
        timer.start()
        stop = threading.Event()
        supervision = QuerySupervision(
            redis_url=endpoints.redis_url, topic=topic, timer=timer, trigger_interval_ms=trigger_ms
        )
        supervisor = threading.Thread(
            target=watch,
            args=(query, stop, supervision),
            name="consumer-supervisor",
            daemon=True,
        )
        supervisor.start()
        try:
            yield lambda: spark_phases(query)
        finally:
            stop.set()
            supervisor.join(60)
            query.stop()


# --- one bucket count -----------------------------------------------------------------------


def measure(
    spec: CollectionSpec,
    endpoints: Endpoints,
    cluster: LocalRedisCluster,
    topic: str,
    consumer: Phases,
    args: argparse.Namespace,
    grouped_every: int = 0,
) -> dict[str, Any]:
    """Seeds and warms up the consumer, then offers the load while the cut is sampled."""
    seed, load = workload(spec, args, grouped_every)
    units = [unit.name for unit in spec.units()]
    producer = KafkaProducer(ProducerConfig(endpoints.kafka_bootstrap, client_id="bench-buckets"))
    watcher = ProbeWatcher(endpoints.redis_url, units)
    sampler = CutSampler(endpoints.redis_url, spec, args.cut_every_ms / 1000)
    partitions: dict[bytes, int] = {}

    def placed(error: KafkaError | None, message: KafkaMessage) -> None:
        key, partition = message.key(), message.partition()
        if error is None and key is not None and partition is not None:
            partitions[bytes(key)] = partition

    try:
        publish(producer, topic, seed, math.inf, on_delivery=placed)
        producer.flush()
        if wait_applied(watcher, len(seed), SEED_TIMEOUT_S) is None:
            raise RuntimeError(f"the consumer did not apply the seed within {SEED_TIMEOUT_S} s")
        watcher.timeline.append((time.monotonic(), len(seed)))
        watcher.start()
        sampler.start()
        before, counted = snapshot(consumer, watcher), node_counters(cluster.nodes)
        rate = len(load) / args.duration  # messages/s: the load spans --duration
        start, last = publish(producer, topic, load, rate, watcher)
        drained = wait_applied(watcher, len(seed) + len(load), args.drain_timeout)
        after, counted_after = snapshot(consumer, watcher), node_counters(cluster.nodes)
        applied = watcher.applied() - len(seed)  # messages of the load applied by then
        polls = Counter(watcher.polls)
        end = time.monotonic() if drained is None else drained
        sampler.stop()
        watcher.stop()
        per_unit = [
            int(watcher.client.hget(CollectionKeys(unit).stats, "requests") or 0) for unit in units
        ]
    finally:
        sampler.stopping.set()
        watcher.stopping.set()
        producer.close()
    result = summarize(watcher, load, (start, last, rate), drained, (before, after))
    # CPU per million updates applied: all of the load once drained, else what was by then.
    result = dataclasses.replace(result, updates=round(result.updates * applied / len(load)))
    owner = {key: cluster.slot_owner(key_slot(key.encode())).port for key in polls}
    polled = [
        sum(n for key, n in polls.items() if owner[key] == node.port) for node in cluster.nodes
    ]
    nodes = node_deltas(counted, counted_after, polled)
    units_on = placement(cluster, spec)
    for node, entry in zip(cluster.nodes, nodes, strict=True):
        entry["port"] = node.port
        entry["buckets"] = units_on[node.port]
    return {
        "buckets": spec.buckets,
        "grouped_every": grouped_every,
        **step_figures(result),
        "messages": len(load),
        "messages_applied": applied,
        "nodes": nodes,
        "busiest_share": busiest_share([n["commands"] for n in nodes]),
        "fcall_busiest_share": busiest_share([n["fcall_ms"] for n in nodes]),
        "cpu_busiest_share": busiest_share([n["cpu_s"] for n in nodes]),
        "cut": cut_figures(sampler, start, end),
        "requests_per_bucket": per_unit,
        "partitions_used": len(set(partitions.values())),
        "keys_per_partition": sorted(
            (sum(1 for p in partitions.values() if p == q) for q in set(partitions.values())),
            reverse=True,
        ),
    }


# A consumer on a topic while inside: its phase totals through the returned call.
Consume = Callable[[str], AbstractContextManager[Phases]]


def run_count(
    buckets: int,
    grouped_every: int,
    consume: Consume,
    endpoints: Endpoints,
    cluster: LocalRedisCluster,
    args: argparse.Namespace,
) -> dict[str, Any]:
    """One bucket count (and share of grouped requests) on a fresh topic and a fresh
    collection, both removed after, applied by ``consume``'s consumer."""
    name = f"{args.schema}-buckets-{buckets}"  # fixed: the same placement in every run
    spec = dataclasses.replace(introspection_spec(args.schema), name=name, buckets=buckets)
    if buckets > 1 and not args.key_hash:  # as `collections create` assigns them
        spec = dataclasses.replace(spec, partitioning=assign(name, buckets, args.partitions, "t"))
    topic = f"bench-buckets-{buckets}-{uuid.uuid4().hex[:8]}"
    store = RedisStore.connect(endpoints.redis_url, load_functions=True)
    with scratch_topic(endpoints, topic, args.partitions):
        store.create_collection(spec)
        try:
            with consume(topic) as consumer:
                return measure(spec, endpoints, cluster, topic, consumer, args, grouped_every)
        finally:
            store.drop_collection(spec.name)


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every bucket count, the 1-bucket baseline first, then the counts with grouped
    requests, on one cluster and one session."""
    counts = sorted({int(n) for n in args.bucket_counts.split(",")})
    if BASELINE_BUCKETS not in counts:
        counts.insert(0, BASELINE_BUCKETS)  # the baseline is measured in the same run
    plan = [(count, 0) for count in counts]
    if args.grouped_every:
        grouped = sorted({int(n) for n in args.grouped_counts.split(",") if n.strip()})
        plan += [(count, args.grouped_every) for count in grouped]
    load_before = os.getloadavg()
    configs = []
    with services() as endpoints, tempfile.TemporaryDirectory(prefix="bench-buckets-") as tmp:
        cluster = start_redis_cluster(Path(tmp) / "redis-cluster", masters=args.masters)
        try:
            on_cluster = dataclasses.replace(endpoints, redis_url=cluster.url)
            spark = bench_session(args.master, "bench-buckets")

            def consume(topic: str) -> AbstractContextManager[Phases]:
                return supervised_consumer(spark, on_cluster, topic, args.trigger_ms)

            try:
                for count, grouped_every in plan:
                    configs.append(
                        run_count(count, grouped_every, consume, on_cluster, cluster, args)
                    )
            finally:
                spark.stop()
        finally:
            cluster.stop()
    return {
        "configs": configs,
        "schema": args.schema,
        "masters": args.masters,
        "replicas": args.replicas,
        "partitions": args.partitions,
        "cut_every_ms": args.cut_every_ms,
        "cores": os.cpu_count(),
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }


# --- printing -------------------------------------------------------------------------------


def _row(c: dict[str, Any]) -> list[Any]:
    cut = c["cut"]
    return [
        label(c),
        round(c["offered"]),
        round(c["applied"]),
        round(c["p50_ms"]),
        round(c["p99_ms"]),
        c["cpu_s_per_million"].get("all", math.nan),
        " / ".join(f"{n['commands']:,}" for n in c["nodes"]),
        f"{c['busiest_share']:.2f}x",
        f"{c['fcall_busiest_share']:.2f}x",
        " / ".join(str(n["buckets"]) for n in c["nodes"]),
        f"{cut['trail_times_p50']:.0f} / {cut['trail_times_p99']:.0f}",
        f"{cut['trail_ms_p50']:.1f} / {cut['trail_ms_p99']:.1f}",
        f"{cut['read_ms_p50']:.1f} / {cut['read_ms_p99']:.1f}",
        f"{cut['per_bucket_ms_p50']:.1f} / {cut['per_bucket_ms_p99']:.1f}",
    ]


COLUMNS = [
    "collection", "offered/s", "applied/s", "p50 ms", "p99 ms", "CPU s/M", "commands per primary",
    "busiest/even", "FCALL ms busiest/even", "buckets per primary", "cut behind (times) p50/p99",
    "cut behind ms p50/p99", "cut read ms p50/p99", "one call per bucket ms p50/p99",
]  # fmt: skip


def _report(result: dict[str, Any], args: argparse.Namespace) -> None:
    rows = [_row(c) for c in result["configs"]]
    report("buckets", COLUMNS, rows, {"settings": vars(args), **result})
    console = Console()
    print("\n".join(buckets_details({"figures": result})), flush=True)
    load = result["load_average"]
    console.print(
        f"{SHARED_MACHINE} ({result['cores']} cores; load average "
        f"{', '.join(f'{x:.2f}' for x in load['before'])} before, "
        f"{', '.join(f'{x:.2f}' for x in load['after'])} after)"
    )
    for c in result["configs"]:
        cut = c["cut"]
        console.print(
            f"{label(c)}: {c['messages']:,} messages on {c['partitions_used']} "
            f"partitions (keys per partition {c['keys_per_partition']}); requests per bucket "
            f"{min(c['requests_per_bucket']):,} to {max(c['requests_per_bucket']):,}; "
            f"{cut['samples']} cuts read ({cut['at_latest']} at every bucket's latest, "
            f"{cut['held_back']} holding a bucket back for a group, {cut['errors']} refused), "
            f"the sampler's CPU {cut['sampler_cpu_s']:.1f} s; cut read p50/p99 "
            f"{cut['read_ms_p50']:.2f}/{cut['read_ms_p99']:.2f} ms pipelined, "
            f"{cut['per_bucket_ms_p50']:.2f}/{cut['per_bucket_ms_p99']:.2f} ms one call per "
            "bucket; "
            f"{c['unseen_probes']} probes unseen; drained {c['drain_s']:.1f} s after the "
            "last send"
        )


def parser() -> argparse.ArgumentParser:
    """The bucket counts, the cluster, and the load's shape."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--bucket-counts", default="1,4,16,64", help="1 (the baseline) is added")
    parser.add_argument(
        "--key-hash",
        action="store_true",
        help="assign the buckets no partitions: the keys' hash places them, as for a "
        "collection created before assignments (default: assigned, as created now)",
    )
    parser.add_argument(
        "--grouped-every",
        type=int,
        default=20,
        help="in the runs of --grouped-counts: requests per request that also writes "
        "another replica's row, a group of two parts (0: no such runs)",
    )
    parser.add_argument(
        "--grouped-counts",
        default="16",
        help="bucket counts run again with grouped requests (empty: none)",
    )
    parser.add_argument("--master", default="local[2]", help="Spark master")
    parser.add_argument(
        "--rate",
        type=float,
        default=10_000,
        help="offered updates/s (as capacity's first step: a load a shared 2-core machine "
        "sustains)",
    )
    add_load_options(parser)
    return parser


def add_load_options(parser: argparse.ArgumentParser) -> None:
    """The load's shape, the cluster and the consumer's trigger (``bench.curves`` too)."""
    parser.add_argument(
        "--duration", type=float, default=30, help="seconds of load per count (bench.curves: step)"
    )
    parser.add_argument("--updates", type=int, default=100, help="updates per request (even)")
    parser.add_argument("--replicas", type=int, default=256, help="simulated replicas")
    parser.add_argument("--keys", type=int, default=100, help="rows per replica")
    parser.add_argument(
        "--probe-every",
        type=int,
        default=10,
        help="requests per probe (the watcher's HEXISTS polls count among the commands)",
    )
    parser.add_argument("--cut-every-ms", type=float, default=100, help="how often the cut is read")
    parser.add_argument("--partitions", type=int, default=16, help="of each topic")
    parser.add_argument("--masters", type=int, default=3, help="primaries of the Redis Cluster")
    parser.add_argument("--schema", default="arrangement_sizes", help="an introspection schema")
    parser.add_argument(
        "--trigger-ms",
        type=int,
        default=from_env(ConsumerConfig).trigger_interval_ms,
        help="the consumer's (CM_TRIGGER_INTERVAL_MS) unless given",
    )
    parser.add_argument("--drain-timeout", type=float, default=30, help="seconds")


def main() -> None:
    args = parser().parse_args()
    _report(run(args), args)


if __name__ == "__main__":
    main()
