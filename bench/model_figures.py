"""The capacity model over ``bench.curves``' results: pure, for the benchmark, the report and
the plots alike.

The model (``bench/capacity_model.py``, its batch time ``bench/batch_model.py``) is fitted
over the held steps of 1 and 4 buckets on 1 core (the batch time, the latency) and the
baseline's (CPU by process kind), and is run at every point: the others test it. Its plan
for the fleet of docs/concepts/buckets.md stands on the same fit.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any

from bench import batch_model
from bench import capacity_model as model
from bench.batch_model import BatchSample, fit_cost, fit_latency
from bench.climbs import sustained
from bench.cpu import BROKER
from bench.curve_figures import PARTS, at_capacity, baseline, number, table
from bench.figure import Result
from bench.targets import CAPACITY_P99_MS
from collection_manager.core.buckets import MAX_BUCKETS

# The fleet of docs/concepts/buckets.md's capacity plan: 10,000 replicas, 5 collections
# each, a step a second of about 436 updates (the simulated source's defaults, counted).
FLEET_REPLICAS, FLEET_UPDATES_PER_REPLICA_S, FLEET_REQUESTS_PER_REPLICA_S = 10_000, 436.0, 5.0
FLEET_LARGEST_SHARE = 0.5  # arrangement_sizes: 2.2 of the 4.4 million updates/s
# A consumer process's cores in the plan: an 8-core node's, a task (a bucket) per core.
FLEET_PROCESS_CORES = 8
# The points the model is fitted at, on 1 core: 1 bucket tells a batch's cost, 4 a
# task's; every other point tests it.
CALIBRATION_BUCKETS = (1, 4)


def held(point: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The point's steps drained with p99 within the bound."""
    return [s for s in point["steps"] if sustained(s) and s["p99_ms"] <= CAPACITY_P99_MS]


def point_of(point: Mapping[str, Any], result: Mapping[str, Any]) -> model.Point:
    """Where ``point``'s work ran, as the model takes it."""
    step = at_capacity(point) or point["steps"][0]
    per_primary = [n["buckets"] for n in step["nodes"]]
    layout = point["layout"]
    shape = batch_model.Shape(
        partitions=step["partitions_used"],
        cores=point["cores"],
        updates_per_request=result["scale"]["updates"],
        trigger_s=trigger_s(result),
    )
    return model.Point(
        shape=shape,
        busiest_primary=max(per_primary) / sum(per_primary),
        service_cores=len(set(layout["redis"]) | set(layout["kafka"])),
        shared=layout["shared"],
    )


def window_s(step: Mapping[str, Any]) -> float:
    """A step's span: from its first send until all was applied (the load's span,
    ``updates / offered``, and the drain)."""
    return step["updates"] / step["offered"] + step["drain_s"]


def cpu_per_second(step: Mapping[str, Any]) -> dict[str, float]:
    """CPU seconds per second of each process kind over ``step``'s window."""
    return {
        kind: per_million * step["updates"] / 1e6 / window_s(step)
        for kind, per_million in step["cpu_s_per_million"].items()
        if kind != "all"
    }


def costs_at(point: Mapping[str, Any]) -> model.Costs | None:
    """The CPU costs fitted over ``point``'s drained steps (none without a capacity)."""
    steps = [s for s in point["steps"] if sustained(s) and s["messages_applied"]]
    if point["capacity"] is None or not steps:
        return None
    samples = [(s["applied"], cpu_per_second(s)) for s in steps]
    per_request = sum(s["updates"] for s in steps) / sum(s["messages_applied"] for s in steps)
    return model.costs_of(samples, PARTS, per_request)


def batch(step: Mapping[str, Any]) -> tuple[float, float]:
    """A step's updates a batch and seconds a batch (Spark's triggerExecution)."""
    phases = step["phases_s"]
    return step["updates"] / phases["batches"], phases["triggerExecution"] / phases["batches"]


def calibration(points: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The points the model is fitted at: 1 core, the calibration bucket counts."""
    return [p for p in points if p["cores"] == 1 and p["buckets"] in CALIBRATION_BUCKETS]


def trigger_s(result: Mapping[str, Any]) -> float:
    """The consumer's trigger interval in the run's settings."""
    return float(result["scale"]["trigger_ms"]) / 1000


def fitted(result: Mapping[str, Any]) -> model.Model | None:
    """The model fitted over the calibration points' held steps: the batch cost, the
    latency, and CPU by kind at the baseline (none without the baseline's capacity or a
    held step with batches)."""
    points = result["figures"]["points"]
    base = baseline(points)
    costs = None if base is None else costs_at(base)
    steps = [s for p in calibration(points) for s in held(p) if s["phases_s"]["batches"]]
    if costs is None or not steps:
        return None
    per_request, trigger = result["scale"]["updates"], trigger_s(result)
    samples = [
        BatchSample(batch_model.tasks_with_data(s["partitions_used"], n / per_request), n, t)
        for s in steps
        for n, t in [batch(s)]
    ]
    cost = fit_cost(samples, serial=costs.driver.per_update)
    latency = fit_latency(
        [(max(b.seconds, trigger) + b.seconds, s["p99_ms"] / 1000)
         for s, b in zip(steps, samples, strict=True)]
    )  # fmt: skip
    return model.Model(cost, latency, costs)


def rung(rate: float, rates: Sequence[float]) -> float | None:
    """The highest of the ladder's ``rates`` within ``rate`` (none below its foot)."""
    return max((r for r in rates if r <= rate * 1.01), default=None)


def model_rows(result: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The model at every point: predicted capacity and the ladder's step it falls on,
    bottleneck, measured, error."""
    found = fitted(result)
    if found is None:
        return []
    figures = result["figures"]
    fitted_at = [(p["cores"], p["buckets"]) for p in calibration(figures["points"])]
    rates = [float(r) for r in result["scale"]["rates"].split(",")]
    rows = []
    for p in figures["points"]:
        where = point_of(p, result)
        predicted, bottleneck = model.predict(found, where, figures["bound_ms"] / 1000)
        measured = p["capacity"]
        rows.append(
            {
                "cores": p["cores"],
                "buckets": p["buckets"],
                "measured": measured,
                "predicted": predicted,
                "predicted_rung": rung(predicted, rates),
                "measured_rung": None if measured is None else rung(measured, rates),
                "bottleneck": bottleneck,
                "error": model.error(predicted, measured) if measured else math.nan,
                "batch_error": batch_error(found, where, p),
                "calibration": (p["cores"], p["buckets"]) in fitted_at,
            }
        )
    return rows


def batch_error(found: model.Model, where: model.Point, point: Mapping[str, Any]) -> float:
    """The median error of the model's batch time against the measured mean, over the
    point's drained steps (NaN without one)."""
    errors = [
        model.error(model.batch_time(found, where, s["offered"]), batch(s)[1])
        for s in point["steps"]
        if sustained(s) and s["phases_s"]["batches"]
    ]
    return statistics.median(errors) if errors else math.nan


def held_loads(points: Sequence[Mapping[str, Any]]) -> model.Held:
    """The busiest primary's and the broker's CPU seconds a second in any held step."""
    steps = [s for p in points for s in held(p)]
    return model.Held(
        primary=max((n["cpu_s"] / window_s(s) for s in steps for n in s["nodes"]), default=0.0),
        broker=max((cpu_per_second(s).get(BROKER, 0.0) for s in steps), default=0.0),
    )


def fleet_plan(result: Mapping[str, Any]) -> tuple[model.Plan, model.Model, model.Held] | None:
    """The model's plan for the fleet, with the model and the loads it stands on (none
    without the model, or when nothing measured held a load)."""
    found = fitted(result)
    if found is None:
        return None
    figures = result["figures"]
    loads = held_loads(figures["points"])
    fleet = model.Fleet(
        FLEET_REPLICAS, FLEET_UPDATES_PER_REPLICA_S, FLEET_REQUESTS_PER_REPLICA_S,
        FLEET_LARGEST_SHARE,
    )  # fmt: skip
    try:
        plan = model.plan(
            found, fleet, FLEET_PROCESS_CORES, loads, figures["bound_ms"] / 1000,
            trigger_s(result),
        )  # fmt: skip
    except ValueError:
        return None
    return plan, found, loads


def percent(value: float) -> str:
    """A signed whole percentage ("+0%" for what rounds to none), "-" for NaN."""
    return "-" if math.isnan(value) else f"{round(value, 2) + 0.0:+.0%}"


def model_details(result: Result) -> list[str]:
    """The report's part on the model: its predictions, its plan."""
    return [
        "The capacity model (`bench/capacity_model.py`, the batch time of "
        "`bench/batch_model.py`), fitted at 1 and 4 buckets on 1 core:",
        "",
        *model_lines(result),
    ]


def model_lines(result: Result) -> list[str]:
    """The model's predictions beside the measurements, and its plan for the fleet."""
    rows = model_rows(result)
    if not rows:
        return ["The model needs the 1-bucket, 1-core point's capacity: none was measured."]
    lines = table(
        ["consumer cores", "buckets", "measured capacity", "model", "model's step", "bound by",
         "error", "batch time's error (median over steps)"],
        [
            [
                str(r["cores"]),
                str(r["buckets"]),
                number(r["measured"]),
                number(r["predicted"]),
                number(r["predicted_rung"]),
                r["bottleneck"] + (" (fitted here)" if r["calibration"] else ""),
                percent(r["error"]),
                percent(r["batch_error"]),
            ]
            for r in rows
        ],
    )  # fmt: skip
    tested = [r for r in rows if not r["calibration"] and not math.isnan(r["error"])]
    if tested:
        errors = sorted(abs(r["error"]) for r in tested)
        on_step = sum(r["predicted_rung"] == r["measured_rung"] for r in tested)
        lines += [
            "",
            f"Over the {len(tested)} points it was not fitted at: error median "
            f"{errors[len(errors) // 2]:.0%}, worst {errors[-1]:.0%}; the model picks the "
            f"measured step at {on_step} of them (capacity is measured on the ladder's "
            "rates, so a point is known only to a step: the true capacity is at least the "
            "measured and below the next step).",
        ]
    found = fleet_plan(result)
    if found is not None:
        lines += ["", *plan_lines(*found)]
    return lines


def plan_lines(plan: model.Plan, fitted_model: model.Model, loads: model.Held) -> list[str]:
    """The plan for the fleet, and the costs and loads it stands on."""
    cost, latency, costs = fitted_model.batch, fitted_model.latency, fitted_model.costs
    over = ""
    if plan.largest_buckets > MAX_BUCKETS:  # a bucket's partition is one task, one core
        over = f", more than the {MAX_BUCKETS} a collection may have"
    return [
        f"For {FLEET_REPLICAS:,} replicas at {FLEET_UPDATES_PER_REPLICA_S:,.0f} updates "
        f"a second each in {FLEET_REQUESTS_PER_REPLICA_S:g} requests "
        f"({plan.updates_per_s:,.0f} updates/s, {plan.requests_per_s:,.0f} requests/s) the "
        f"model asks for {plan.consumer_processes:,} consumer processes of "
        f"{plan.process_cores} cores ({plan.consumer_cores:,} cores, each process carrying "
        f"{plan.process_capacity:,.0f} updates/s within p99 1 s), {plan.redis_primaries:,} "
        f"Redis primaries, {plan.partitions:,} partitions (a bucket each) and "
        f"{plan.broker_cores:,} broker cores; the largest collection (half the updates) "
        f"{plan.largest_buckets:,} buckets{over}. It stands on the batch time fitted at 1 "
        f"core ({cost.per_batch * 1e3:.0f} ms a batch, {cost.per_task * 1e3:.1f} ms a task, "
        f"{cost.per_update * 1e6:.1f} µs an update of which {cost.serial * 1e6:.1f} µs "
        f"serial), p99 = {latency.scale:.2f} x (interval + batch time) "
        f"{latency.offset * 1e3:+.0f} ms, Redis {costs.redis.per_update * 1e6:.1f} CPU s per "
        f"million updates, the broker {costs.broker_per_request * 1e3:.3f} CPU ms a "
        f"request, and no primary or broker core busier than the busiest measured in a "
        f"step that held ({loads.primary:.2f} and {loads.broker:.2f} CPU s/s). Beyond 2 "
        "cores the batch model is not checked on this machine.",
    ]
