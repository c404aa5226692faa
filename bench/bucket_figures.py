"""The figures of ``bench.buckets``: pure, for the benchmark and the report alike.

How evenly the Redis Cluster's primaries share the work (``busiest_share``), how far a
consistent cut trails each bucket's latest time (``cut_trail``), and the report's rows
(``buckets``) and table (``buckets_details``), each bucket count beside the 1-bucket
baseline of the same run.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench import targets
from bench.figure import Figure, Result

BASELINE_BUCKETS = 1  # one collection, one unit: one node and one partition do everything


def busiest_share(per_node: Sequence[float]) -> float:
    """The busiest node's part of the total against an even split (1 = even, N = all on
    one of N nodes); NaN without any."""
    total = sum(per_node)
    if not per_node or total <= 0:
        return math.nan
    return max(per_node) / (total / len(per_node))


def quantile(values: Sequence[float], q: int) -> float:
    """The ``q``-th percentile (inclusive method), NaN with fewer than two values."""
    if len(values) < 2:
        return math.nan
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def passed_at(history: Sequence[tuple[float, Sequence[int]]], bucket: int, time: int) -> float:
    """When ``bucket`` went past ``time``, at the earliest, as ``history`` saw it.

    ``history`` holds ``(when, each bucket's latest time)`` readings in order. The bucket
    went past ``time`` after the last reading that still had it at or below ``time`` (the
    first reading when none did): that reading's ``when``, so a trail in ms measured from
    it is an upper bound, by at most one reading's interval.
    """
    for when, times in reversed(history):
        if times[bucket] <= time:
            return when
    return history[0][0] if history else math.nan


def cut_trail(
    history: Sequence[tuple[float, Sequence[int]]],
    cut: Sequence[int],
    latest: Sequence[int],
    read_at: float,
    known_ms: Mapping[int, float] | None = None,
) -> tuple[int, float]:
    """How far a cut trails the buckets' latest times read at ``read_at``: in times (the
    most any bucket is ahead of it) and in ms (the longest any bucket has been past it).
    Zero for a cut at every bucket's latest.

    Args:
        known_ms: per bucket, how long ago it went past the cut when that is known (the
            time its next request was applied); else the upper bound of :func:`passed_at`.
    """
    known = known_ms or {}
    ahead = [b for b, (at, now) in enumerate(zip(cut, latest, strict=True)) if now > at]
    times = max((latest[b] - cut[b] for b in ahead), default=0)
    ms = max(
        (
            known[b] if b in known else (read_at - passed_at(history, b, cut[b])) * 1000
            for b in ahead
        ),
        default=0.0,
    )
    return times, ms


def label(config: Mapping[str, Any]) -> str:
    """``16 buckets``, or ``16 buckets, 1 in 20 requests grouped`` for a run with groups."""
    count, grouped = config["buckets"], config.get("grouped_every", 0)
    text = f"{count} bucket{'' if count == 1 else 's'}"
    return text + (f", 1 in {grouped} requests grouped" if grouped else "")


def baseline(configs: Sequence[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The 1-bucket run without grouped requests, if it ran."""
    return next(
        (c for c in configs if c["buckets"] == BASELINE_BUCKETS and not c.get("grouped_every", 0)),
        None,
    )


def _node_note(config: Mapping[str, Any]) -> str:
    commands = "/".join(f"{n['commands']:,.0f}" for n in config["nodes"])
    placed = "/".join(str(n["buckets"]) for n in config["nodes"])
    return f"commands per primary {commands}; buckets per primary {placed}"


def buckets(result: Result) -> list[Figure]:
    """Per bucket count: applied rate, p99, CPU, the busiest primary's share and how far
    the cut trails, each against the 1-bucket run of the same benchmark."""
    configs = result["figures"]["configs"]
    base = baseline(configs)
    rows: list[Figure] = []
    for c in configs:
        if c is base:
            continue
        count = c["buckets"]

        def against(key: str, b: Mapping[str, Any] | None = base) -> float | None:
            return None if b is None else b[key]

        name = label(c)
        one = "1 bucket"
        split = targets.BUCKET_SPLIT if count >= targets.BUCKET_SPLIT_AT else None
        rows += [
            Figure(
                "buckets",
                f"applied rate, {name}",
                c["applied"],
                "updates/s",
                against("applied"),
                one,
                note=f"offered {c['offered']:,.0f}",
            ),
            Figure(
                "buckets",
                f"p99 publish-to-visible, {name}",
                c["p99_ms"],
                "ms",
                against("p99_ms"),
                one,
            ),
            Figure(
                "buckets",
                f"CPU per million updates, every process, {name}",
                c["cpu_s_per_million"].get("all"),
                "CPU s",
                None if base is None else base["cpu_s_per_million"].get("all"),
                one,
            ),
            Figure(
                "buckets",
                f"busiest primary's Redis commands / an even split, {name}",
                c["busiest_share"],
                "",
                against("busiest_share"),
                one,
                split,
                note=_node_note(c),
            ),
            Figure(
                "buckets",
                f"consistent cut behind the freshest bucket, p99, {name}",
                c["cut"]["trail_ms_p99"],
                "ms",
                None if base is None else base["cut"]["trail_ms_p99"],
                one,
                note=f"p99 {c['cut']['trail_times_p99']:,.0f} times behind; "
                f"{c['cut']['samples']:,} cuts read",
            ),
            Figure(
                "buckets",
                f"cut read p99, a pipeline per primary, {name}",
                c["cut"]["read_ms_p99"],
                "ms",
                c["cut"].get("per_bucket_ms_p99"),
                "one call per bucket",
                note=f"p50 {number(c['cut']['read_ms_p50'])} ms, one call per bucket "
                f"{number(c['cut'].get('per_bucket_ms_p50'))} ms, in the same run",
            ),
        ]
    return rows


def number(value: float | None) -> str:
    """A table cell: thousands separators, two decimals below 10, "-" for none or NaN."""
    if value is None or math.isnan(value):
        return "-"
    if math.isinf(value):
        return "∞"
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.0f}"


def _cells(c: Mapping[str, Any]) -> list[str]:
    cut = c["cut"]
    return [
        label(c),
        number(c["offered"]),
        number(c["applied"]),
        number(c["p50_ms"]),
        number(c["p99_ms"]),
        number(c["cpu_s_per_million"].get("all")),
        " / ".join(number(n["commands"]) for n in c["nodes"]),
        number(c["busiest_share"]) + "x",
        number(c["fcall_busiest_share"]) + "x",
        " / ".join(str(n["buckets"]) for n in c["nodes"]),
        f"{number(cut['trail_times_p50'])} / {number(cut['trail_times_p99'])}",
        f"{number(cut['trail_ms_p50'])} / {number(cut['trail_ms_p99'])}",
        f"{number(cut['read_ms_p50'])} / {number(cut['read_ms_p99'])}",
        f"{number(cut.get('per_bucket_ms_p50'))} / {number(cut.get('per_bucket_ms_p99'))}",
        f"{cut.get('held_back', 0):,} of {cut['samples']:,}",
        str(c["partitions_used"]),
    ]


BUCKETS_COLUMNS = (
    "collection",
    "offered/s",
    "applied/s",
    "p50 ms",
    "p99 ms",
    "CPU s per million",
    "Redis commands per primary",
    "busiest / even",
    "busiest / even, FCALL time",
    "buckets per primary",
    "cut behind, times p50 / p99",
    "cut behind, ms p50 / p99",
    "cut read ms p50 / p99",
    "cut read, one call per bucket, ms p50 / p99",
    "cuts holding a bucket back for a group",
    "partitions used",
)


def buckets_details(result: Result) -> list[str]:
    """Every bucket count's figures in one table (the report's section)."""
    figures = result["figures"]
    lines = [
        f"One collection (`{figures['schema']}`, bucketed by `replica_id`) on a Redis "
        f"Cluster of {figures['masters']} primaries, written by {figures['replicas']:,} "
        f"simulated replicas through a {figures['partitions']}-partition topic, applied by "
        "the Spark consumer; the 1-bucket run is the baseline. Commands are `INFO "
        "commandstats` deltas per primary over the load, the calls inside functions "
        "included, the probe watcher's `HEXISTS` polls taken out (the cut sampler's reads "
        "left in); the cut is `RedisStore.cut()` read every "
        f"{figures['cut_every_ms']:g} ms against each bucket's latest time, and timed "
        "beside the same read with one call per bucket (`bench/cut_reads.py`).",
        "",
    ]
    header = "| " + " | ".join(BUCKETS_COLUMNS) + " |"
    lines += [header, "|" + "---|" * len(BUCKETS_COLUMNS)]
    lines += ["| " + " | ".join(_cells(c)) + " |" for c in figures["configs"]]
    return lines
