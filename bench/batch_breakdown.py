"""One micro-batch of the Spark consumer, step by step, at a steady load.

The end-to-end load of ``bench.e2e`` is offered at ``--rate`` for ``--duration`` seconds
to the Spark consumer once per trigger interval of ``--triggers`` (one query each, in one
Spark session), and to the plain confluent-kafka loop, the baseline: what this machine
does with no micro-batches at all. Per batch that read records it keeps Spark's own phases
(``StreamingQueryProgress.durationMs``: latestOffset, queryPlanning, walCommit, addBatch,
commitOffsets, triggerExecution) and the consumer's steps (``spark_consumers/steps.py``:
on the driver check, collect, replicas, progress, record; on the executors, summed over
the batch's tasks, decode, epochs, dead_letters, apply, sightings). It prints the median
of each per batch, and each path's publish-to-visible p50 and p99.

Idle, each consumer also runs ``--idle-s`` seconds on an empty topic, and the CPU seconds
per second of every process kind (``bench/cpu.py``) are what polling costs while nothing
arrives: the price of a shorter trigger, against the plain loop's idle polling.

What is not a step of its own is the rest of its parent: addBatch less the driver's
steps is the foreachBatch hand-over (py4j, Python); collect less the longest task's
executor steps is task launch, the Kafka fetch and the Arrow hand-off to pandas.

Run: ``.venv/bin/python -m bench.batch_breakdown [--rate 10000] [--triggers 500,100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from bench.capacity import step_figures
from bench.common import report, services
from bench.cpu import cpu_by_kind
from bench.e2e import parser as e2e_parser
from bench.e2e import run_path, scratch_topic
from bench.e2e_paths import bench_session, plain_consumer, spark_consumer
from collection_manager.devservices import Endpoints
from spark_consumers.metrics import BatchMetrics
from spark_consumers.steps import DRIVER_STEPS, EXECUTOR_STEPS

SPARK_PHASES = (
    "latestOffset", "queryPlanning", "walCommit", "addBatch", "commitOffsets",
    "triggerExecution",
)  # fmt: skip


def medians_ms(batches: Sequence[dict[str, float]], keys: Sequence[str]) -> dict[str, float]:
    """The median of each key over ``batches`` (ms; a batch without the key counts 0)."""
    return {
        key: statistics.median([b.get(key, 0.0) for b in batches]) if batches else 0.0
        for key in keys
    }


SETTLE_S = 3.0  # after the consumer started, before its idle CPU is sampled


def idle_cpu(
    label: str, consumer: Callable[[str], Any], endpoints: Endpoints, args: argparse.Namespace
) -> dict[str, float]:
    """CPU seconds per second of each process kind (and ``all``) while ``consumer`` runs on
    an empty topic for ``args.idle_s`` seconds."""
    topic = f"bench-idle-{label}-{uuid.uuid4().hex[:8]}"
    with scratch_topic(endpoints, topic, args.partitions), consumer(topic):
        time.sleep(SETTLE_S)
        before, start = cpu_by_kind(), time.monotonic()
        time.sleep(args.idle_s)
        after, elapsed = cpu_by_kind(), time.monotonic() - start
    used = {kind: max(0.0, after[kind] - before.get(kind, 0.0)) / elapsed for kind in after}
    return used | {"all": sum(used.values())}


def _spark_run(
    spark: Any, endpoints: Any, args: argparse.Namespace, trigger_ms: int
) -> dict[str, Any]:
    steps: list[dict[str, float]] = []
    phases: list[dict[str, int]] = []

    def batch_done(metrics: BatchMetrics, seconds: float) -> None:
        steps.append(
            {k: v / 1000 for k, v in metrics.steps_us.items()} | {"driver": seconds * 1000}
        )

    result = run_path(
        f"breakdown-t{trigger_ms}",
        lambda topic: spark_consumer(spark, endpoints, topic, trigger_ms, batch_done, phases),
        endpoints,
        args,
    )
    figures = step_figures(result)
    return {
        "trigger_ms": trigger_ms,
        "batches": len(phases),
        "p50_ms": figures["p50_ms"],
        "p99_ms": figures["p99_ms"],
        "spark_ms": medians_ms([{k: float(v) for k, v in p.items()} for p in phases], SPARK_PHASES),
        "steps_ms": medians_ms(steps, (*DRIVER_STEPS, *EXECUTOR_STEPS, "driver")),
        "cpu_s_per_million": figures["cpu_s_per_million"].get("all"),
        "idle_cpu": idle_cpu(
            f"t{trigger_ms}",
            lambda topic: spark_consumer(spark, endpoints, topic, trigger_ms),
            endpoints,
            args,
        ),
    }


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The baseline, then the Spark consumer at each trigger interval."""
    triggers = [int(t) for t in args.triggers.split(",")]
    with services() as endpoints:

        def loop(topic: str) -> Any:
            return plain_consumer(endpoints, topic)

        plain = step_figures(run_path("breakdown-plain", loop, endpoints, args))
        plain_idle = idle_cpu("plain", loop, endpoints, args)
        spark = bench_session(args.master, "bench-batch-breakdown")
        try:
            runs = [_spark_run(spark, endpoints, args, trigger) for trigger in triggers]
        finally:
            spark.stop()
    return {
        "rate": args.rate,
        "plain": {"p50_ms": plain["p50_ms"], "p99_ms": plain["p99_ms"],
                  "cpu_s_per_million": plain["cpu_s_per_million"].get("all"),
                  "idle_cpu": plain_idle},
        "spark": runs,
    }  # fmt: skip


def parser() -> argparse.ArgumentParser:
    """The rate, the trigger intervals, and the load's shape (as ``bench.e2e``'s)."""
    parser = e2e_parser()
    parser.description = __doc__
    parser.set_defaults(rate=10_000, duration=10, drain_timeout=15)
    parser.add_argument("--triggers", default="500,250,100", help="trigger intervals (ms)")
    parser.add_argument("--idle-s", type=float, default=10.0, help="seconds sampled idle")
    return parser


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    rows: list[list[Any]] = []
    for r in result["spark"]:
        trigger = f"{r['trigger_ms']} ms"
        rows += [[trigger, "spark", k, v] for k, v in r["spark_ms"].items()]
        rows += [[trigger, "step", k, v] for k, v in r["steps_ms"].items()]
        rows += [[trigger, "latency", "p50", r["p50_ms"]], [trigger, "latency", "p99", r["p99_ms"]]]
        rows += [[trigger, "idle", "CPU s per s", r["idle_cpu"]["all"]]]
    rows += [["-", "baseline", "p50", result["plain"]["p50_ms"]]]
    rows += [["-", "baseline", "p99", result["plain"]["p99_ms"]]]
    rows += [["-", "baseline idle", "CPU s per s", result["plain"]["idle_cpu"]["all"]]]
    report("batch_breakdown", ["trigger", "kind", "what", "median ms per batch"], rows, result)


if __name__ == "__main__":
    main()
