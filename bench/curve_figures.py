"""``bench.curves``' figures from its results: pure, for the benchmark and the report alike.

A point is one (core count, bucket count) with its climb's steps; its capacity is the
highest rate sustained at p99 within the bound. The capacity model's fit, predictions and
plan over the same results are ``bench/model_figures.py``'s.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from bench import capacity_model as model
from bench.climbs import sustained
from bench.cpu import BENCH, BROKER, DRIVER, JVM, REDIS, WORKERS
from bench.figure import Figure, Result
from bench.targets import CAPACITY_P99_MS

# The process kinds (bench/cpu.py) of each part the model and the tables name.
PARTS: dict[str, tuple[str, ...]] = {
    "driver": (DRIVER,),
    "executors": (JVM, WORKERS),
    "redis": (REDIS,),
    "broker": (BROKER,),
    "load": (BENCH,),
}
SHOWN = {  # the columns of CPU per million updates, by what runs where
    "consumer": ("driver", "executors"),
    "Redis": ("redis",),
    "Kafka broker": ("broker",),
    "load generator": ("load",),
}


def at_capacity(point: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The step that sets the point's capacity (none when no step was within the bound):
    of a step run twice at that rate, the one that held."""
    at = [s for s in point["steps"] if s["offered"] == point["capacity"]]
    return next((s for s in at if sustained(s) and s["p99_ms"] <= CAPACITY_P99_MS), None)


def cpu_by_part(step: Mapping[str, Any]) -> dict[str, float]:
    """CPU seconds per million updates of each shown part (and ``all``) in ``step``."""
    per = step["cpu_s_per_million"]
    out = {
        name: sum(per.get(kind, 0.0) for part in parts for kind in PARTS[part])
        for name, parts in SHOWN.items()
    }
    out["all"] = per.get("all", math.nan)
    return out


def baseline(points: Sequence[Mapping[str, Any]], cores: int = 1) -> Mapping[str, Any] | None:
    """The 1-bucket point at ``cores``."""
    return next((p for p in points if p["cores"] == cores and p["buckets"] == 1), None)


def efficiencies(points: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Per bucket count and core count above 1: capacity / (cores x capacity at 1 core)."""
    one = {p["buckets"]: p["capacity"] for p in points if p["cores"] == 1}
    return [
        {
            "buckets": p["buckets"],
            "cores": p["cores"],
            "capacity": p["capacity"],
            "one_core": one.get(p["buckets"]),
            "efficiency": model.efficiency(p["capacity"], p["cores"], one[p["buckets"]])
            if one.get(p["buckets"]) and p["capacity"]
            else math.nan,
        }
        for p in points
        if p["cores"] > 1
    ]


# --- tables -------------------------------------------------------------------------------


def number(value: float | None) -> str:
    """A cell: thousands separators, two decimals below 10, "-" for none or NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    return f"{value:,.2f}" if abs(value) < 10 else f"{value:,.0f}"


CURVE_COLUMNS = (
    "consumer cores", "buckets", "capacity (updates/s, p99 <= 1 s)", "applied/s there",
    "p99 ms there", "steps", *(f"{name} CPU s/M" for name in SHOWN), "all CPU s/M",
    "shares a core with the services",
)  # fmt: skip


def curve_cells(point: Mapping[str, Any]) -> list[str]:
    """One point's row: capacity, the applied rate and p99 there, CPU per part."""
    step = at_capacity(point)
    cpu = cpu_by_part(step) if step else {}
    return [
        str(point["cores"]),
        str(point["buckets"]),
        number(point["capacity"]),
        number(step["applied"] if step else None),
        number(step["p99_ms"] if step else None),
        " / ".join(f"{s['offered']:,.0f}" for s in point["steps"]),
        *(number(cpu.get(name)) for name in [*SHOWN, "all"]),
        "yes" if point["layout"]["shared"] else "no",
    ]


def table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def efficiency_table(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The scaling efficiency of every bucket count at every core count above 1."""
    rows = [
        [str(e["buckets"]), str(e["cores"]), number(e["capacity"]), number(e["one_core"]),
         number(e["efficiency"])]
        for e in efficiencies(points)
    ]  # fmt: skip
    return table(["buckets", "consumer cores", "capacity", "at 1 core", "efficiency"], rows)


def curves_details(result: Result) -> list[str]:
    """The report's section: the curves and the scaling efficiency (the model's part is
    ``bench/model_figures.py``'s)."""
    figures = result["figures"]
    placements = dict.fromkeys(f"{p['cores']} cores: {p['placement']}" for p in figures["points"])
    lines = [
        f"One collection on a Redis Cluster of {figures['masters']} primaries, "
        f"{figures['replicas']:,} replicas through a {figures['partitions']}-partition topic, "
        "each bucket on its own partition; each point climbs the rates shown until a step "
        f"is not drained or past p99 {figures['bound_ms']:,} ms. CPU seconds per million "
        "updates applied at the capacity step, by process kind (`bench/cpu.py`). Pinned "
        "(`bench/pinning.py`):",
        "",
        *(f"- {text}" for text in placements),
        "",
        *table(CURVE_COLUMNS, [curve_cells(p) for p in figures["points"]]),
        "",
        "Scaling efficiency (capacity at k cores / k times capacity at 1 core, same bucket "
        "count, same run):",
        "",
        *efficiency_table(figures["points"]),
    ]
    return lines


def curves(result: Result) -> list[Figure]:
    """Capacity per point against the same core count's 1-bucket point, and the scaling
    efficiency per bucket count."""
    points = result["figures"]["points"]
    rows = []
    for p in points:
        base = baseline(points, p["cores"])
        if base is None or p is base:
            continue
        rows.append(
            Figure(
                "curves",
                f"capacity at p99 <= 1 s, {p['buckets']} buckets, consumer on {p['cores']} "
                f"core{'s' if p['cores'] > 1 else ''}",
                p["capacity"],
                "updates/s",
                base["capacity"],
                "1 bucket, same cores",
            )
        )
    for e in efficiencies(points):
        rows.append(
            Figure(
                "curves",
                f"scaling efficiency, {e['buckets']} bucket{'s' if e['buckets'] > 1 else ''}, "
                f"{e['cores']} cores",
                e["efficiency"],
                "",
                None,
                "",
                note=f"capacity {number(e['capacity'])} at {e['cores']} cores, "
                f"{number(e['one_core'])} at 1",
            )
        )
    return rows
