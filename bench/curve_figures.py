"""``bench.curves``' figures from its results: pure, for the benchmark and the report alike.

A point is one (core count, bucket count) with its climb's steps; its capacity is the
highest rate sustained at p99 within the bound. The capacity model
(``bench/capacity_model.py``) takes its costs from the baseline (1 bucket on 1 core) at
its capacity step, is calibrated there, and is run at every point.
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
from collection_manager.core.buckets import MAX_BUCKETS

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
# The fleet of docs/concepts/buckets.md's capacity plan: 10,000 replicas, 5 collections
# each, a step a second of about 436 updates (the simulated source's defaults, counted).
FLEET_REPLICAS, FLEET_UPDATES_PER_REPLICA_S, FLEET_REQUESTS_PER_REPLICA_S = 10_000, 436.0, 5.0
FLEET_LARGEST_SHARE = 0.5  # arrangement_sizes: 2.2 of the 4.4 million updates/s


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


def point_of(point: Mapping[str, Any]) -> model.Point:
    """Where ``point``'s work ran, as the model takes it."""
    step = at_capacity(point) or point["steps"][0]
    per_primary = [n["buckets"] for n in step["nodes"]]
    layout = point["layout"]
    return model.Point(
        cores=point["cores"],
        tasks=step["partitions_used"],
        busiest_primary=max(per_primary) / sum(per_primary),
        service_cores=len(set(layout["redis"]) | set(layout["kafka"])),
        shared=layout["shared"],
    )


def cpu_per_second(step: Mapping[str, Any]) -> dict[str, float]:
    """CPU seconds per second of each process kind over ``step``: from its first send until
    all was applied (the load's span, ``updates / offered``, and the drain)."""
    window = step["updates"] / step["offered"] + step["drain_s"]
    return {
        kind: per_million * step["updates"] / 1e6 / window
        for kind, per_million in step["cpu_s_per_million"].items()
        if kind != "all"
    }


def costs_at(point: Mapping[str, Any]) -> model.Costs | None:
    """The model's costs fitted over ``point``'s drained steps (none without a capacity)."""
    steps = [s for s in point["steps"] if sustained(s) and s["messages_applied"]]
    if point["capacity"] is None or not steps:
        return None
    samples = [(s["applied"], cpu_per_second(s)) for s in steps]
    per_request = sum(s["updates"] for s in steps) / sum(s["messages_applied"] for s in steps)
    return model.costs_of(samples, PARTS, per_request)


def model_rows(figures: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model at every point: predicted capacity, bottleneck, measured, error."""
    points = figures["points"]
    base = baseline(points)
    costs = None if base is None else costs_at(base)
    if base is None or costs is None:
        return []
    usable = model.calibrate(costs, point_of(base), base["capacity"])
    rows = []
    for p in points:
        predicted, bottleneck = model.predict(costs, point_of(p), usable)
        measured = p["capacity"]
        rows.append(
            {
                "cores": p["cores"],
                "buckets": p["buckets"],
                "measured": measured,
                "predicted": predicted,
                "bottleneck": bottleneck,
                "error": model.error(predicted, measured) if measured else math.nan,
                "calibration": p is base,
            }
        )
    return rows


def fleet_plan(figures: Mapping[str, Any]) -> tuple[model.Plan, model.Costs, float] | None:
    """The model's plan for the fleet from the baseline's costs, with them and ``usable``
    (none without the baseline, or when its fixed costs fill a core)."""
    base = baseline(figures["points"])
    costs = None if base is None else costs_at(base)
    if base is None or costs is None:
        return None
    usable = min(model.calibrate(costs, point_of(base), base["capacity"]), 1.0)
    fleet = (FLEET_REPLICAS, FLEET_UPDATES_PER_REPLICA_S, FLEET_REQUESTS_PER_REPLICA_S)
    try:
        plan = model.plan(costs, *fleet, usable=usable, largest_share=FLEET_LARGEST_SHARE)
        return plan, costs, usable
    except ValueError:
        return None


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


def _table(columns: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def model_lines(result: Result) -> list[str]:
    """The model's predictions beside the measurements, and its plan for the fleet."""
    figures = result["figures"]
    rows = model_rows(figures)
    if not rows:
        return ["The model needs the 1-bucket, 1-core point's capacity: none was measured."]
    lines = _table(
        ["consumer cores", "buckets", "measured capacity", "model", "bound by", "error"],
        [
            [
                str(r["cores"]),
                str(r["buckets"]),
                number(r["measured"]),
                number(r["predicted"]),
                r["bottleneck"] + (" (calibrated here)" if r["calibration"] else ""),
                "-" if math.isnan(r["error"]) else f"{r['error']:+.0%}",
            ]
            for r in rows
        ],
    )
    tested = [abs(r["error"]) for r in rows if not r["calibration"] and not math.isnan(r["error"])]
    if tested:
        lines += [
            "",
            f"Error over the {len(tested)} predicted points: median "
            f"{sorted(tested)[len(tested) // 2]:.0%}, worst {max(tested):.0%} (capacity is "
            "measured on the ladder's rates, so a point is known only to a ladder step).",
        ]
    found = fleet_plan(figures)
    if found is not None:
        lines += ["", *plan_lines(*found)]
    return lines


def plan_lines(plan: model.Plan, costs: model.Costs, usable: float) -> list[str]:
    """The plan for the fleet, and the costs and usable share it stands on."""

    def cost(c: model.Cost) -> str:
        return f"{c.per_update * 1e6:.1f} CPU s per million updates + {c.fixed:.2f} CPU s/s"

    over = ""
    if plan.largest_buckets > MAX_BUCKETS:  # a bucket's partition is one task, one core
        over = f", more than the {MAX_BUCKETS} a collection may have"
    return [
        f"For {FLEET_REPLICAS:,} replicas at {FLEET_UPDATES_PER_REPLICA_S:,.0f} updates "
        f"a second each in {FLEET_REQUESTS_PER_REPLICA_S:g} requests "
        f"({plan.updates_per_s:,.0f} updates/s, {plan.requests_per_s:,.0f} requests/s) the "
        f"model asks for {plan.consumer_cores:,} consumer cores in "
        f"{plan.consumer_processes:,} consumer processes, {plan.redis_primaries:,} Redis "
        f"primaries, {plan.partitions:,} partitions (a bucket each) and "
        f"{plan.broker_cores:,} broker cores; the largest collection (half the updates) "
        f"{plan.largest_buckets:,} buckets{over}"
        "; from the 1-bucket, 1-core point's costs "
        f"(driver {cost(costs.driver)}; executors {cost(costs.executors)}; Redis "
        f"{cost(costs.redis)}; the broker {costs.broker_per_request * 1e3:.3f} CPU ms per "
        f"request + {costs.broker.fixed:.2f} CPU s/s) and {usable:.0%} of a core usable "
        "within p99 1 s.",
    ]


def efficiency_table(points: Sequence[Mapping[str, Any]]) -> list[str]:
    """The scaling efficiency of every bucket count at every core count above 1."""
    rows = [
        [str(e["buckets"]), str(e["cores"]), number(e["capacity"]), number(e["one_core"]),
         number(e["efficiency"])]
        for e in efficiencies(points)
    ]  # fmt: skip
    return _table(["buckets", "consumer cores", "capacity", "at 1 core", "efficiency"], rows)


def curves_details(result: Result) -> list[str]:
    """The report's section: the curves, the scaling efficiency, the model."""
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
        *_table(CURVE_COLUMNS, [curve_cells(p) for p in figures["points"]]),
        "",
        "Scaling efficiency (capacity at k cores / k times capacity at 1 core, same bucket "
        "count, same run):",
        "",
        *efficiency_table(figures["points"]),
        "",
        "The capacity model (`bench/capacity_model.py`), calibrated at 1 bucket on 1 core:",
        "",
        *model_lines(result),
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
