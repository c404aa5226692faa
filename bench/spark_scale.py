"""The Spark consumer's throughput as the topic's partitions and the collections grow.

The load of ``bench.e2e`` is offered at ``--rate``, above what the consumer applies on two
cores, to Spark on ``--master`` (one session for every point), each point on a fresh
topic and fresh collections; its applied rate over the steady part of the load is its
throughput there, and its CPU seconds per million applied updates come with it
(``bench/cpu.py``). The points:

- partitions ``--partition-counts`` of the topic, with the five introspection collections;
- collections ``--collection-counts`` (cycling through the introspection schemas) on four
  partitions, with rows per replica and collection scaled so that every point seeds the
  same number of rows and a request updates rows it updated as long ago.

Baseline: the shape every other benchmark runs (four partitions, five collections), a
point of the partitions curve, measured in the same run.

Run: ``.venv/bin/python -m bench.spark_scale [--partition-counts 1,4,8] [--rate 80000]``.
"""

from __future__ import annotations

import argparse
from typing import Any

from bench.capacity import step_figures
from bench.common import report, services
from bench.e2e import parser as e2e_parser
from bench.e2e import run_path
from bench.e2e_paths import bench_session, spark_consumer
from bench.e2e_workload import PARTITIONS
from collection_manager.devservices import Endpoints
from schemas.introspection import introspection_specs

DEFAULT_COLLECTIONS = len(introspection_specs())


def _point(
    spark: Any, endpoints: Endpoints, args: argparse.Namespace, partitions: int, collections: int
) -> dict[str, Any]:
    # As many seeded rows at every point: rows per replica and collection shrink as the
    # collections grow, never below what one request updates.
    keys = max(args.updates // 2, args.keys * DEFAULT_COLLECTIONS // collections)
    shape = {"partitions": partitions, "collections": collections, "keys": keys}
    point_args = argparse.Namespace(**{**vars(args), **shape})
    label = f"scale-p{partitions}-c{collections}"
    result = run_path(
        label,
        lambda topic: spark_consumer(spark, endpoints, topic, args.trigger_ms),
        endpoints,
        point_args,
    )
    return {**shape, **step_figures(result)}


def parser() -> argparse.ArgumentParser:
    """The points, and the load's shape (as ``bench.e2e``'s)."""
    parser = e2e_parser()
    parser.description = __doc__
    # Throughput is measured while the load is offered; the backlog it leaves is not
    # waited for long (the next point starts on a topic of its own).
    parser.set_defaults(rate=80_000, duration=8, drain_timeout=5)
    parser.add_argument("--partition-counts", default="1,4,8")
    parser.add_argument("--collection-counts", default="1,10,100")
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every point of both curves; the baseline's shape is measured once."""
    partitions = [int(n) for n in args.partition_counts.split(",")]
    collections = [int(n) for n in args.collection_counts.split(",")]
    with services() as endpoints:
        spark = bench_session(args.master, "bench-spark-scale")
        try:
            points: dict[tuple[int, int], dict[str, Any]] = {}
            shapes = [(p, DEFAULT_COLLECTIONS) for p in partitions]
            shapes += [(PARTITIONS, c) for c in collections]
            for shape in [(PARTITIONS, DEFAULT_COLLECTIONS), *shapes]:
                if shape not in points:
                    points[shape] = _point(spark, endpoints, args, *shape)
        finally:
            spark.stop()
    return {
        "baseline": points[PARTITIONS, DEFAULT_COLLECTIONS],
        "partitions": [points[p, DEFAULT_COLLECTIONS] for p in partitions],
        "collections": [points[PARTITIONS, c] for c in collections],
    }


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    rows = [
        (p["partitions"], p["collections"], p["offered"], p["applied"], p["p99_ms"],
         p["drain_s"], p["cpu_s_per_million"].get("all"))
        for p in [result["baseline"], *result["partitions"], *result["collections"]]
    ]  # fmt: skip
    columns = ["partitions", "collections", "offered/s", "applied/s", "p99 ms", "drain s",
               "CPU s/M"]  # fmt: skip
    report("spark_scale", columns, rows, {"settings": vars(args)})


if __name__ == "__main__":
    main()
