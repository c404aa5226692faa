"""Capacity: the highest load each consumer sustains, and where its CPU goes.

The load of ``bench.e2e`` is offered step by step at rising rates (``--rates``) to each
variant (``--variants``), one after the other in one run, each step on a fresh topic and
fresh collections: the plain confluent-kafka loop (the baseline), the Spark consumer on
``local[2]``, the same on a Redis Cluster of three masters on loopback, and the same on a
Spark standalone cluster of two one-core Workers (same machine, same two cores: what the
cluster's shipping, scheduling and executor JVMs cost, not what more machines add).
A step is sustained when everything offered was applied within ``--drain-timeout`` after
the last send; a path stops climbing once a step's p99 passes ``--stop-above-ms``.
Capacity at a latency bound is the highest offered rate of a sustained step whose p99
publish-to-visible latency is within it.

The baseline and Spark on ``local[2]`` climb ``--repeats`` times, taking turns (plain,
Spark, plain, Spark, ...) so that whatever else the machine does falls on both alike; the
report compares them by the median of the climbs (issue 32: the latency ratios at the
first rate, the capacity ratio). Every step records which climb it belongs to. The other
variants climb once.

CPU: each step samples the CPU seconds of every process kind (``bench/cpu.py``: Kafka
broker, Redis, this process with the producer, watcher and Spark driver, Spark's JVM and
Python workers, the plain loop) when the load starts and once it is applied, and divides
by the updates it carried: CPU seconds per million applied updates, a figure that does
not depend on how fast this machine is. The producer and the watcher are in every path.

Run: ``.venv/bin/python -m bench.capacity [--rates 10000,20000,40000] [--variants plain,spark]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from bench.climbs import median_capacity, sustained
from bench.common import report, services
from bench.cpu import KINDS, per_million
from bench.e2e import PathResult, path_figures, run_path
from bench.e2e_paths import CPU_PREFIX, bench_session, plain_consumer, spark_consumer
from bench.e2e_workload import add_shape_options
from bench.targets import CAPACITY_P99_MS
from collection_manager.config import ConsumerConfig, from_env
from collection_manager.devservices import Endpoints
from collection_manager.devservices.redis_cluster import start_cluster as start_redis_cluster
from collection_manager.devservices.spark_cluster import start_cluster as start_spark_cluster

SECOND_BOUND_MS = 2_000  # the looser bound capacity is also given at
# What is compared, in the order it runs: the baseline, the Spark consumer as the other
# benchmarks run it, and the same consumer on a standalone cluster or on a Redis Cluster.
VARIANTS = {
    "plain": "plain loop (baseline)",
    "spark": "Spark local[2]",
    "redis_cluster": "Spark local[2], Redis Cluster of 3 masters",
    "standalone": "Spark standalone cluster, 2 Workers x 1 core",
}
# The pair issue 32's ratios compare, climbed ``--repeats`` times each.
REPEATED = ("plain", "spark")


def step_figures(result: PathResult) -> dict[str, Any]:
    """One step's figures: e2e's (without the latency list) and CPU per million updates."""
    figures = {k: v for k, v in path_figures(result).items() if k != "latencies_ms"}
    used = {kind: result.phases.get(CPU_PREFIX + kind, 0.0) for kind in KINDS}
    used |= {  # and the kinds only some paths have (a Spark driver process: bench/cpu.py)
        key.removeprefix(CPU_PREFIX): seconds
        for key, seconds in result.phases.items()
        if key.startswith(CPU_PREFIX)
    }
    before = dict.fromkeys(used, 0.0)
    figures["cpu_s_per_million"] = per_million(before, used, result.updates)
    figures["updates"] = result.updates
    return figures


def climb(
    label: str,
    consumer: Callable[[str], Any],
    endpoints: Endpoints,
    args: argparse.Namespace,
    number: int = 0,
) -> list[dict[str, Any]]:
    """The steps of climb ``number`` of one path, until one is not sustained or its p99
    passes the stop bound."""
    steps: list[dict[str, Any]] = []
    for rate in (float(r) for r in args.rates.split(",")):
        step_args = argparse.Namespace(**{**vars(args), "rate": rate})
        steps.append(step_figures(run_path(label, consumer, endpoints, step_args)))
        steps[-1]["climb"] = number
        if not sustained(steps[-1]) or steps[-1]["p99_ms"] > args.stop_above_ms:
            break
    return steps


def climb_in_turns(
    names: Sequence[str], endpoints: Endpoints, args: argparse.Namespace
) -> dict[str, list[dict[str, Any]]]:
    """``--repeats`` climbs of each of ``names`` (some of REPEATED), taking turns; Spark
    keeps one session for all of its climbs."""
    consumers: dict[str, Callable[[str], Any]] = {
        "plain": lambda topic: plain_consumer(endpoints, topic)
    }
    spark = bench_session(args.master, "bench-capacity-spark") if "spark" in names else None
    if spark is not None:
        session = spark
        consumers["spark"] = lambda topic: spark_consumer(
            session, endpoints, topic, args.trigger_ms
        )
    paths: dict[str, list[dict[str, Any]]] = {name: [] for name in names}
    try:
        for number in range(args.repeats):
            for name in names:
                paths[name] += climb(name, consumers[name], endpoints, args, number)
    finally:
        if spark is not None:
            spark.stop()
    return paths


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every variant's steps and capacities, one variant after the other."""
    chosen = args.variants.split(",")
    unknown = set(chosen) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be at least 1, not {args.repeats}")
    paths: dict[str, list[dict[str, Any]]] = {}
    with services() as endpoints, tempfile.TemporaryDirectory(prefix="bench-capacity-") as tmp:
        paths |= climb_in_turns([name for name in REPEATED if name in chosen], endpoints, args)
        if "redis_cluster" in chosen:
            redis_cluster = start_redis_cluster(Path(tmp) / "redis-cluster", masters=3)
            try:
                on_cluster = dataclasses.replace(endpoints, redis_url=redis_cluster.url)
                paths["redis_cluster"] = climb_spark("cluster", args.master, on_cluster, args)
            finally:
                redis_cluster.stop()
        if "standalone" in chosen:
            spark_cluster = start_spark_cluster(Path(tmp) / "spark-cluster", workers=2)
            try:
                paths["standalone"] = climb_spark("standalone", spark_cluster.url, endpoints, args)
            finally:
                spark_cluster.stop()
    return {
        "paths": paths,
        "labels": {name: VARIANTS[name] for name in paths},
        "capacity": {
            name: {
                str(bound): median_capacity(steps, bound)
                for bound in (CAPACITY_P99_MS, SECOND_BOUND_MS)
            }
            for name, steps in paths.items()
        },
        "repeats": args.repeats,
    }


def climb_spark(
    label: str, master: str, endpoints: Endpoints, args: argparse.Namespace
) -> list[dict[str, Any]]:
    """The Spark consumer's steps on ``master``, in a session of its own (stopped after)."""
    spark = bench_session(master, f"bench-capacity-{label}")
    try:
        return climb(
            label,
            lambda topic: spark_consumer(spark, endpoints, topic, args.trigger_ms),
            endpoints,
            args,
        )
    finally:
        spark.stop()


def _report(result: dict[str, Any], args: argparse.Namespace) -> None:
    rows = [
        [VARIANTS[name], s["climb"] + 1, s["offered"], s["applied"], s["p50_ms"], s["p99_ms"],
         s["drain_s"], s["cpu_s_per_million"].get("all", math.nan)]
        for name, steps in result["paths"].items()
        for s in steps
    ]  # fmt: skip
    columns = ["consumer", "climb", "offered/s", "applied/s", "p50 ms", "p99 ms", "drain s"]
    columns.append("CPU s/M")
    report("capacity", columns, rows, {"settings": vars(args), "capacity": result["capacity"]})
    console = Console()
    for name, found in result["capacity"].items():
        for bound, rate in found.items():
            shown = "none of the steps" if rate is None else f"{rate:,.0f} updates/s"
            console.print(f"{VARIANTS[name]}: capacity at p99 <= {bound} ms: {shown}")
    if result["repeats"] > 1:
        console.print(f"(the baseline's and Spark's: medians of {result['repeats']} climbs)")


def parser() -> argparse.ArgumentParser:
    """The ladder of loads and the load's shape (as ``bench.e2e``'s)."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rates", default="10000,20000,30000,40000,60000,80000,100000")
    parser.add_argument("--duration", type=float, default=10, help="seconds of load per step")
    parser.add_argument("--updates", type=int, default=500, help="updates per request (even)")
    parser.add_argument("--keys", type=int, default=5_000, help="rows per replica and collection")
    parser.add_argument("--probe-every", type=int, default=4, help="requests per probe")
    parser.add_argument(
        "--trigger-ms",
        type=int,
        default=from_env(ConsumerConfig).trigger_interval_ms,
        help="the consumer's (CM_TRIGGER_INTERVAL_MS) unless given",
    )
    parser.add_argument("--drain-timeout", type=float, default=20, help="seconds")
    parser.add_argument(
        "--stop-above-ms", type=float, default=4_000, help="stop climbing past this p99"
    )
    parser.add_argument(
        "--repeats", type=int, default=1, help=f"climbs of each of {', '.join(REPEATED)}"
    )
    parser.add_argument("--master", default="local[2]", help="Spark master of `spark`")
    parser.add_argument(
        "--variants", default=",".join(VARIANTS), help=f"some of {', '.join(VARIANTS)}"
    )
    add_shape_options(parser)
    return parser


def main() -> None:
    args = parser().parse_args()
    _report(run(args), args)


if __name__ == "__main__":
    main()
