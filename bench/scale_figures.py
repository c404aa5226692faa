"""The report's rows of the scale curves, and the growth each curve shows.

``growth`` names how a cost grows with size from the curve itself: the exponent ``k`` of
``cost ~ size^k`` between the smallest and the largest size measured (a log-log slope).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from bench.figure import Figure, Result

FLAT_BELOW = 0.1  # |k| under this: the cost barely depends on size (1.6x at most over 100x)
LINEAR_WITHIN = 0.2  # k within this of 1: linear


def growth(points: Sequence[tuple[float, float]]) -> str:
    """``flat``, ``linear``, ``falling`` or ``~ n^k`` from ``(size, cost)`` points (k from
    the smallest and the largest size)."""
    valid = sorted((n, c) for n, c in points if n > 0 and c > 0)
    if len(valid) < 2 or valid[0][0] == valid[-1][0]:
        return "one size: no growth measured"
    (n0, c0), (n1, c1) = valid[0], valid[-1]
    k = math.log(c1 / c0) / math.log(n1 / n0)
    if abs(k) < FLAT_BELOW:
        return f"flat (k = {k:.2f})"
    if k < 0:
        return f"falling (k = {k:.2f})"
    if abs(k - 1) <= LINEAR_WITHIN:
        return f"linear (k = {k:.2f})"
    return f"~ n^{k:.2f}"


def row_scale_growth(sizes: Sequence[dict[str, Any]]) -> dict[str, str]:
    """The growth in rows of the point query's p50, the full read and the total memory."""
    curves = {
        "point": [(s["rows"], s["point"]["ours"]["p50_ms"]) for s in sizes],
        "full": [(s["rows"], s["full"]["ours_ms"]) for s in sizes],
        "memory": [(s["rows"], s["bytes_per_row"] * s["rows"]) for s in sizes],
    }
    return {name: growth(points) for name, points in curves.items()}


def row_scale(result: Result) -> list[Figure]:
    """Per size: point query p50, full read and memory per row, against the plain hash."""
    sizes = result["figures"]["sizes"]
    replica_rows = result["figures"]["replica_rows"]
    shapes = row_scale_growth(sizes)
    rows = []
    for size in sizes:
        at = f"at {size['rows']:,} rows"
        log_share = size["log_bytes_per_row"] / size["bytes_per_row"]
        rows += [
            Figure(
                "row_scale",
                f"point query p50 {at}",
                size["point"]["ours"]["p50_ms"],
                "ms",
                size["point"]["plain"]["p50_ms"],
                "HGET on a plain hash",
                note=f"p99 {size['point']['ours']['p99_ms']:.2f} ms; index, then the filter "
                f"over the replica's {replica_rows:,} rows; {shapes['point']} in rows",
            ),
            Figure(
                "row_scale",
                f"full read {at}",
                size["full"]["ours_ms"],
                "ms",
                size["full"]["plain_ms"],
                "HGETALL of a plain hash, decoded alike",
                note=f"{shapes['full']} in rows",
            ),
            Figure(
                "row_scale",
                f"Redis memory per row {at}",
                size["bytes_per_row"],
                "bytes/row",
                size["plain_bytes_per_row"],
                "plain hash of the same rows",
                note=f"{log_share:.0%} of it the change log; total {shapes['memory']} in rows",
            ),
        ]
    return rows


def _count(n: int, noun: str) -> str:
    return f"{n:,} {noun}" + ("" if n == 1 else "s")


def fleet_scale_growth(figures: dict[str, Any]) -> dict[str, str]:
    """The growth of the time per update in replicas and in collections, and of the lease
    check in replicas."""
    by_replicas, by_collections = figures["replicas"], figures["collections"]
    return {
        "replicas": growth([(p["replicas"], 1 / p["updates_per_s"]) for p in by_replicas]),
        "lease": growth([(p["replicas"], p["lease_check_ms"]) for p in by_replicas]),
        "collections": growth([(p["collections"], 1 / p["updates_per_s"]) for p in by_collections]),
    }


def fleet_scale(result: Result) -> list[Figure]:
    """Apply rate per replica and per collection count, and the lease check per replica
    count, against pipelined HINCRBY and the check without replicas."""
    figures = result["figures"]
    shapes = fleet_scale_growth(figures)
    baseline = "HINCRBY per update, pipelined"
    rows = []
    for point in figures["replicas"]:
        replicas = _count(point["replicas"], "replica")
        rows += [
            Figure(
                "fleet_scale",
                f"apply rate, {replicas}, one collection",
                point["updates_per_s"],
                "updates/s",
                point["baseline_updates_per_s"],
                baseline,
                note=f"heartbeats recorded too; time per update {shapes['replicas']} in replicas",
            ),
            Figure(
                "fleet_scale",
                f"lease check, {replicas}",
                point["lease_check_ms"],
                "ms",
                figures["baseline_lease_check_ms"],
                "the check with no replica",
                note=f"{shapes['lease']} in replicas",
            ),
        ]
    for point in figures["collections"]:
        rows.append(
            Figure(
                "fleet_scale",
                f"apply rate, {_count(point['collections'], 'collection')}, three replicas",
                point["updates_per_s"],
                "updates/s",
                point["baseline_updates_per_s"],
                baseline + ", as many hashes",
                note=f"time per update {shapes['collections']} in collections",
            )
        )
    return rows


KEPT_UP = 0.95  # applied at least this share of the offered rate: a lower bound of capacity


def spark_scale_growth(figures: dict[str, Any]) -> dict[str, str]:
    """The growth of the time per applied update in partitions and in collections."""
    return {
        axis: growth([(p[axis], 1 / p["applied"]) for p in figures[axis] if p["applied"] > 0])
        for axis in ("partitions", "collections")
    }


def spark_scale(result: Result) -> list[Figure]:
    """Spark's applied rate per partition count and per collection count, against the
    shape the other benchmarks run (four partitions, five collections)."""
    figures = result["figures"]
    shapes = spark_scale_growth(figures)
    base = figures["baseline"]
    baseline_name = f"{base['partitions']} partitions, {base['collections']} collections"
    rows = []
    for axis, other in (("partitions", "collections"), ("collections", "partitions")):
        for point in figures[axis]:
            kept_up = point["applied"] >= KEPT_UP * point["offered"]
            note = (
                f"offered {point['offered']:,.0f}/s"
                + (", all kept up with: a lower bound" if kept_up else "")
                + f"; p99 {point['p99_ms']:,.0f} ms; "
                f"{point['cpu_s_per_million'].get('all', math.nan):,.0f} CPU s per million; "
                f"time per update {shapes[axis]} in {axis}"
            )
            rows.append(
                Figure(
                    "spark_scale",
                    f"Spark applied rate, {_count(point[axis], axis[:-1])} "
                    f"({_count(point[other], other[:-1])})",
                    point["applied"],
                    "updates/s",
                    base["applied"],
                    baseline_name,
                    note=note,
                )
            )
    return rows
