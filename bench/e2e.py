"""End to end: sustained throughput and publish-to-visible latency, Spark vs a plain loop.

One offered load runs through (1) the Spark consumer (``start_consumer``, 500 ms trigger,
``local[2]``) and (2) the no-Spark baseline (``bench.plain_loop``: one process,
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

Throughput: the watcher samples the collections' ``requests`` counters, which ``cm_apply``
bumps in the same atomic step as the data. Applied is the rate over the steady
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
import os
import statistics
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka import Message as KafkaMessage
from confluent_kafka.admin import AdminClient, NewTopic
from rich.console import Console

from bench.common import report, services
from bench.e2e_paths import (
    Phases,
    Watcher,
    bench_session,
    plain_consumer,
    publish,
    snapshot,
    spark_consumer,
    wait_applied,
)
from bench.e2e_workload import Message, add_shape_options, bench_specs, workload
from bench.targets import E2E_P99_MS, E2E_RATE, E2E_SPARK_SHARE
from collection_manager.devservices import Endpoints
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.store import RedisStore

if TYPE_CHECKING:
    pass

SEED_TIMEOUT_S = 180.0  # the seed also waits for Spark's first batches (Python workers)
TARGET_RATE = E2E_RATE.bound
TARGET_P99_MS = E2E_P99_MS.bound
TARGET_SHARE = E2E_SPARK_SHARE.bound

ConsumerFactory = Callable[[str], AbstractContextManager[Phases]]


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
    updates: int  # updates the load carried (all applied once drained)
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
        updates=sum(m.updates for m in load),
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


def run_path(
    label: str, consumer: ConsumerFactory, endpoints: Endpoints, args: argparse.Namespace
) -> PathResult:
    """One consumer on a fresh topic and fresh collections, which are removed after."""
    token = f"{label}-{uuid.uuid4().hex[:8]}"
    topic = f"bench-e2e-{token}"
    specs = bench_specs(args.collections, args.partitions, token)
    with scratch_topic(endpoints, topic, args.partitions):
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


@contextmanager
def scratch_topic(endpoints: Endpoints, topic: str, partitions: int) -> Iterator[None]:
    """``topic`` created with ``partitions`` partitions, deleted after with the consumer's
    dead-letter topic for it."""
    admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
    admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    try:
        yield
    finally:
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
    add_shape_options(parser)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both paths under the same load: their figures, and the targets as printed lines."""
    results: dict[str, PathResult] = {}
    with services() as endpoints:
        results["plain"] = run_path(
            "plain", lambda topic: plain_consumer(endpoints, topic), endpoints, args
        )
        spark = bench_session(args.master, "bench-e2e")
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
