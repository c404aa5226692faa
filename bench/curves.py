"""Curves: the highest load one collection of 1, 4 and 16 buckets sustains, against cores.

For each core count (``--core-counts``; by default 1, 2, 4, ... up to the cores this
process may use, ``bench/pinning.py``) the consumer runs in a process of its own pinned to
that many cores (``bench/consumer_process.py``: Spark on ``local[<cores>]``, its driver,
JVM and Python workers on those cores only), and Redis's primaries, the Kafka broker and
this process (the load generator: producer, probe watcher, cut sampler) are pinned to the
other cores, where there are any (``pinning.layout``; on a 2-core machine at 2 cores
everything shares both, which the results say). Each bucket count (``--bucket-counts``;
1, the baseline, is added) then climbs the rates of ``--rates``, each step a run of
``bench.buckets`` (a fresh topic and collection on a Redis Cluster of ``--masters``
primaries, the same load, CPU by process kind), after a warm-up step that is not counted,
until a step is not drained within ``--drain-timeout`` or its p99 passes
``--stop-above-ms`` twice in a row (:func:`walk`). Capacity is the highest rate of
a sustained step with p99 publish-to-visible within 1 s (``bench/climbs.py``); its
resolution is the ladder's.

The figures (``bench/curve_figures.py``): capacity and the applied rate at it, CPU seconds
per million updates of the consumer, Redis, the broker and the load generator there, the
scaling efficiency (capacity at k cores / k times that at 1 core, per bucket count), and
the capacity model (``bench/capacity_model.py``) fitted at 1 and 4 buckets on 1 core and run
at every point, its predictions beside the measurements with the error.

Run: ``.venv/bin/python -m bench.curves [--core-counts 1,2] [--bucket-counts 1,4,16]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rich.console import Console

from bench import pinning
from bench.buckets import add_load_options, run_count
from bench.climbs import capacity, sustained
from bench.common import report, services
from bench.consumer_process import ConsumerProcess, consumer_process
from bench.curve_figures import CURVE_COLUMNS, curve_cells
from bench.model_figures import model_lines
from bench.targets import CAPACITY_P99_MS
from collection_manager.config import InfraConfig, from_env
from collection_manager.config.services import load_services
from collection_manager.devservices import Endpoints
from collection_manager.devservices.redis_cluster import LocalRedisCluster
from collection_manager.devservices.redis_cluster import start_cluster as start_redis_cluster


def _ints(text: str) -> list[int]:
    return sorted({int(n) for n in text.split(",") if n.strip()})


def ladder(rates: str, start: float | None = None) -> list[float]:
    """The rates of ``rates`` (comma-separated) from the highest within ``start`` (a
    capacity found before: an offered rate, within 1% of its nominal one) on."""
    up = [float(r) for r in rates.split(",")]
    within = [r for r in up if start is not None and r <= start * 1.01]
    return up[len(within) - 1 :] if within else up


def walk(attempt: Callable[[float, bool], bool], rates: Sequence[float], steps_down: int) -> None:
    """A climb's order of steps, pure: ``attempt(rate, counted)`` runs one and says whether
    it held.

    First a warm-up step at the climb's first rate, not counted: a bucket count's first
    query pays for its code paths (on 2026-12-03 the first step of 16 buckets on 1 core took
    645 ms batches where the next took 129). Then the rates up, a step that fails run once
    more before it stops the climb (one 6 s step is at the mercy of one slow batch); when the
    first rate fails so, its halvings, up to ``steps_down`` of them.
    """
    attempt(rates[0], False)

    def holds(rate: float) -> bool:
        return attempt(rate, True) or attempt(rate, True)

    if holds(rates[0]):
        for rate in rates[1:]:
            if not holds(rate):
                return
        return
    for halvings in range(1, steps_down + 1):
        if holds(rates[0] / 2**halvings):
            return


def climb(
    buckets: int,
    consumer: ConsumerProcess,
    endpoints: Endpoints,
    cluster: LocalRedisCluster,
    args: argparse.Namespace,
    start: float | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One bucket count's counted steps at rising rates from ``start`` (the highest rate of
    the ladder within it; its foot without), in :func:`walk`'s order, and its warm-up."""
    steps: list[dict[str, Any]] = []
    warmup: list[dict[str, Any]] = []

    def attempt(rate: float, counted: bool) -> bool:
        step_args = argparse.Namespace(**{**vars(args), "rate": rate, "key_hash": False})
        step = run_count(buckets, 0, consumer.consuming, endpoints, cluster, step_args)
        step["load_average"] = os.getloadavg()
        (steps if counted else warmup).append(step)
        return sustained(step) and step["p99_ms"] <= args.stop_above_ms

    walk(attempt, ladder(args.rates, start), args.steps_down)
    return steps, warmup


def broker_pid() -> int | None:
    """The local broker's pid as the services record has it (none for a configured one)."""
    recorded = load_services(from_env(InfraConfig).services_file)
    return recorded["kafka"].pid if "kafka" in recorded else None


def run_cores(
    layout: pinning.Layout,
    endpoints: Endpoints,
    cluster: LocalRedisCluster,
    args: argparse.Namespace,
    known: dict[int, float],
) -> list[dict[str, Any]]:
    """Every bucket count's climb with the consumer on ``layout``'s cores, each from the
    capacity it had on fewer cores (``known``, by bucket count: updated here)."""
    broker = broker_pid()
    points = []
    with contextlib.ExitStack() as pins:
        pins.enter_context(pinning.pinned([n.pid for n in cluster.nodes], layout.redis))
        broker_tree = [] if broker is None else [broker]
        pins.enter_context(pinning.pinned(broker_tree, layout.kafka, alone=[os.getpid()]))
        with consumer_process(layout.consumer, endpoints, args.trigger_ms) as consumer:
            for buckets in _bucket_counts(args):
                steps, warmup = climb(
                    buckets, consumer, endpoints, cluster, args, known.get(buckets)
                )
                found = capacity(steps, CAPACITY_P99_MS)
                if found is not None:
                    known[buckets] = max(found, known.get(buckets, 0.0))
                points.append(
                    {
                        "cores": len(layout.consumer),
                        "buckets": buckets,
                        "layout": dataclasses.asdict(layout) | {"shared": layout.shared},
                        "placement": layout.describe(),
                        "steps": steps,
                        "warmup": warmup,
                        "capacity": found,
                    }
                )
    return points


def _bucket_counts(args: argparse.Namespace) -> list[int]:
    return sorted({1, *_ints(args.bucket_counts)})  # 1: the same run's baseline


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every core count's curves on one Redis Cluster, the baseline first."""
    allowed = pinning.allowed_cores()
    counts = _ints(args.core_counts) if args.core_counts else pinning.core_counts(len(allowed))
    load_before = os.getloadavg()
    points: list[dict[str, Any]] = []
    known: dict[int, float] = {}  # capacity by bucket count so far, where climbs start
    with services() as endpoints, tempfile.TemporaryDirectory(prefix="bench-curves-") as tmp:
        cluster = start_redis_cluster(Path(tmp) / "redis-cluster", masters=args.masters)
        try:
            on_cluster = dataclasses.replace(endpoints, redis_url=cluster.url)
            for cores in counts:
                layout = pinning.layout(cores, allowed)
                points += run_cores(layout, on_cluster, cluster, args, known)
        finally:
            cluster.stop()
    return {
        "points": points,
        "allowed_cores": list(allowed),
        "core_counts": counts,
        "bound_ms": CAPACITY_P99_MS,
        "masters": args.masters,
        "partitions": args.partitions,
        "replicas": args.replicas,
        "updates_per_request": args.updates,
        "load_average": {"before": load_before, "after": os.getloadavg()},
    }


def _report(result: dict[str, Any], args: argparse.Namespace) -> None:
    rows = [curve_cells(point) for point in result["points"]]
    report("curves", CURVE_COLUMNS, rows, {"settings": vars(args), **result})
    console = Console()
    for point in result["points"]:
        console.print(f"{point['cores']} cores, {point['buckets']} buckets: {point['placement']}")
    print("\n".join(model_lines({"figures": result, "scale": vars(args)})), flush=True)
    load = result["load_average"]
    console.print(
        f"load average {', '.join(f'{x:.2f}' for x in load['before'])} before, "
        f"{', '.join(f'{x:.2f}' for x in load['after'])} after"
    )


def parser() -> argparse.ArgumentParser:
    """Core counts, bucket counts, the ladder, and ``bench.buckets``' load options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument(
        "--core-counts",
        help="the consumer's core counts (default: 1, 2, 4, ... and the cores allowed)",
    )
    parser.add_argument("--bucket-counts", default="1,4,16", help="1 (the baseline) is added")
    parser.add_argument(
        "--rates",
        default="2500,3500,5000,7000,10000,14000,20000,28000,40000",
        help="updates/s: steps of about the square root of 2, so a capacity is known within 41%%",
    )
    parser.add_argument(
        "--steps-down",
        type=int,
        default=2,
        help="when the first rate fails: how many halvings of it to try",
    )
    parser.add_argument(
        "--stop-above-ms", type=float, default=CAPACITY_P99_MS, help="stop climbing past this p99"
    )
    add_load_options(parser)
    parser.set_defaults(duration=6, drain_timeout=8, keys=50)
    return parser


def main() -> None:
    args = parser().parse_args()
    _report(run(args), args)


if __name__ == "__main__":
    main()
