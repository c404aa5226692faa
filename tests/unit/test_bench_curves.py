"""The curves' figures (``bench/curve_figures.py``): efficiency, the model at every point,
the report's section; pure, over made-up results."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.batch_model import BatchCost, Latency, Shape, highest, steady_time
from bench.cpu import BENCH, BROKER, DRIVER, JVM, REDIS, WORKERS
from bench.curve_figures import at_capacity, curves, curves_details, efficiencies
from bench.curves import ladder, walk
from bench.model_figures import fitted, fleet_plan, model_details, model_rows
from bench.report import render

# The consumer's true costs the made-up steps follow: 150 ms a batch, 10 ms a task, 24 µs
# an update; p99 the batch interval plus the batch time plus 50 ms; a 100 ms trigger.
TRUE_COST = BatchCost(per_batch=0.150, per_task=0.010, per_update=24e-6)
TRUE_LATENCY = Latency(scale=1.0, offset=0.050)
TRIGGER_S = 0.1
RATES = (5_000.0, 10_000.0, 20_000.0, 40_000.0)


def _step(offered: float, tasks: int = 1, cores: int = 1) -> dict[str, Any]:
    """A step of 100,000 updates at ``offered`` as the true costs have it."""
    batch_s = steady_time(TRUE_COST, Shape(tasks, cores, 100, TRIGGER_S), offered)
    drained = math.isfinite(batch_s)
    window = 100_000 / offered
    batches = window / max(batch_s, TRIGGER_S) if drained else 1.0
    return {
        "offered": offered,
        "applied": offered,
        "p99_ms": TRUE_LATENCY.p99(batch_s, TRIGGER_S) * 1000,
        "drain_s": 0.0 if drained else math.inf,
        "updates": 100_000,
        "messages_applied": 1_000,
        "partitions_used": tasks,
        "phases_s": {"batches": batches, "triggerExecution": batches * batch_s},
        "nodes": [{"buckets": 1, "cpu_s": 0.3 * window}, {"buckets": 0, "cpu_s": 0.0},
                  {"buckets": 0, "cpu_s": 0.0}],
        "cpu_s_per_million": {
            DRIVER: 4.0, JVM: 15.0, WORKERS: 5.0, REDIS: 10.0, BROKER: 5.0, BENCH: 5.0,
            "all": 44.0,
        },
    }  # fmt: skip


def _point(cores: int, buckets: int) -> dict[str, Any]:
    """A point's climb up ``RATES`` until a step fails, its capacity the highest held."""
    steps = []
    for rate in RATES:
        steps.append(_step(rate, buckets, cores))
        if steps[-1]["p99_ms"] > 1_000:
            break
    spread = [{"buckets": buckets - 2 * (buckets // 3), "cpu_s": 1.0},
              {"buckets": buckets // 3, "cpu_s": 0.5},
              {"buckets": buckets // 3, "cpu_s": 0.5}]  # fmt: skip
    for s in steps:  # over three primaries, the first the busiest
        s["nodes"] = spread if buckets > 1 else s["nodes"]
    shared = cores == 2
    held = [s["offered"] for s in steps if s["p99_ms"] <= 1_000]
    return {
        "cores": cores,
        "buckets": buckets,
        "layout": {
            "consumer": list(range(cores)),
            "redis": [0, 1] if shared else [1],
            "kafka": [0, 1] if shared else [1],
            "shared": shared,
        },
        "placement": f"{cores} cores here",
        "steps": steps,
        "capacity": max(held, default=None),
    }


FIGURES = {
    "points": [_point(1, 1), _point(1, 4), _point(1, 16), _point(2, 1), _point(2, 4)],
    "bound_ms": 1_000,
    "masters": 3,
    "partitions": 16,
    "replicas": 256,
}
SCALE = {"trigger_ms": 100, "updates": 100, "rates": ",".join(f"{r:.0f}" for r in RATES)}
RESULT = {"status": "ok", "figures": FIGURES, "scale": SCALE, "wall_s": 1.0}


def test_the_made_up_climbs_find_what_the_true_costs_allow() -> None:
    capacities = {(p["cores"], p["buckets"]): p["capacity"] for p in FIGURES["points"]}
    assert capacities == {(1, 1): 20_000, (1, 4): 20_000, (1, 16): 10_000, (2, 1): 20_000,
                          (2, 4): 40_000}  # fmt: skip


def test_efficiency_per_bucket_count_against_its_one_core_point() -> None:
    found = {(e["buckets"], e["cores"]): e["efficiency"] for e in efficiencies(FIGURES["points"])}
    assert found == {(1, 2): pytest.approx(0.5), (4, 2): pytest.approx(1.0)}


def test_the_model_fitted_at_1_and_4_buckets_on_1_core_recovers_the_true_costs() -> None:
    found = fitted(RESULT)
    assert found is not None
    assert found.batch.per_batch == pytest.approx(0.150)
    assert found.batch.per_task == pytest.approx(0.010)
    assert found.batch.per_update == pytest.approx(24e-6)
    assert found.batch.serial == pytest.approx(4e-6)  # the driver's CPU an update
    assert found.latency == Latency(pytest.approx(1.0), pytest.approx(0.050))


def test_the_model_is_fitted_at_two_points_and_run_at_every_point() -> None:
    rows = {(r["cores"], r["buckets"]): r for r in model_rows(RESULT)}
    assert [k for k, r in rows.items() if r["calibration"]] == [(1, 1), (1, 4)]
    # 16 buckets on 1 core: the true costs' capacity, the ladder's 10,000 as measured;
    # above 14,474, where every batch pays all 16 tasks (2 x 0.31 s / (1 - 24 µs x r) +
    # 50 ms <= 1 s).
    sixteen = rows[(1, 16)]
    shape = Shape(16, 1, 100, TRIGGER_S)
    true = highest(lambda r: TRUE_LATENCY.p99(steady_time(TRUE_COST, shape, r), 0.1) <= 1, 4e4)
    assert sixteen["predicted"] == pytest.approx(true, rel=1e-4)
    assert sixteen["predicted"] > (1 - 0.62 / 0.95) / 24e-6
    assert sixteen["predicted_rung"] == 10_000 == sixteen["measured"]
    assert sixteen["bottleneck"] == "consumer batches"
    assert sixteen["error"] == pytest.approx(sixteen["predicted"] / 10_000 - 1)
    assert sixteen["batch_error"] == pytest.approx(0.0, abs=1e-9)  # each step's batch time
    # On 2 cores the services share them: slower than the same tasks apart would be.
    assert rows[(2, 4)]["predicted"] < (1 - 2 * 0.17 / 0.95) / (4e-6 + 20e-6 / 2)


def test_without_the_baseline_there_is_no_model() -> None:
    base = {**_point(1, 1), "capacity": None}
    figures = {**FIGURES, "points": [base, *FIGURES["points"][1:]]}
    assert model_rows({**RESULT, "figures": figures}) == []
    assert fleet_plan({**RESULT, "figures": figures}) is None


def test_the_fleets_plan_loads_services_as_the_busiest_held_step() -> None:
    found = fleet_plan(RESULT)
    assert found is not None
    plan, _, loads = found
    # 4 buckets at 40,000 on 2 cores: 1 CPU s over the 2.5 s its 100,000 updates took.
    assert loads.primary == pytest.approx(1.0 / 2.5)
    assert loads.broker == pytest.approx(5e-6 * 40_000)
    assert plan.process_cores == 8
    assert plan.consumer_processes == math.ceil(plan.updates_per_s / plan.process_capacity)


def test_the_report_has_the_curves_the_efficiency_and_the_model() -> None:
    text = "\n".join([*curves_details(RESULT), *model_details(RESULT)])
    assert "| 2 | 4 | 40,000 |" in text
    assert "| 4 | 2 | 40,000 | 20,000 | 1.00 |" in text
    assert "consumer batches (fitted here)" in text
    assert "| 1 | 16 | 10,000 | 14,632 | 10,000 | consumer batches | +46% | +0% |" in text
    assert "the model picks the measured step at" in text
    assert "For 10,000 replicas at 436 updates a second each" in text
    page = render({"benchmarks": {"curves": RESULT}}, {})
    assert "### Capacity against cores and buckets, and the model" in page
    names = [f.name for f in curves(RESULT)]
    assert "capacity at p99 <= 1 s, 4 buckets, consumer on 2 cores" in names
    assert "scaling efficiency, 4 buckets, 2 cores" in names


def test_a_climb_starts_at_the_capacity_found_on_fewer_cores() -> None:
    assert ladder("2500,5000,10000") == [2500, 5000, 10000]
    assert ladder("2500,5000,10000", None) == [2500, 5000, 10000]
    assert ladder("2500,5000,10000", 5002.0) == [5000, 10000]  # offered is a little off
    assert ladder("2500,5000,10000", 1200.0) == [2500, 5000, 10000]  # below the ladder
    assert ladder("2500,5000,10000", 10010.0) == [10000]


def walked(
    holding: set[float], rates: list[float], fail_once: frozenset[float] = frozenset()
) -> list[tuple[float, bool]]:
    """The (rate, counted) steps :func:`walk` runs when the rates in ``holding`` hold, and
    those in ``fail_once`` fail at their first counted try only."""
    ran: list[tuple[float, bool]] = []
    tried: set[float] = set()

    def attempt(rate: float, counted: bool) -> bool:
        ran.append((rate, counted))
        if counted and rate in fail_once and rate not in tried:
            tried.add(rate)
            return False
        return rate in holding

    walk(attempt, rates, steps_down=2)
    return ran


def test_a_climb_warms_up_uncounted_then_climbs_until_a_rate_fails_twice() -> None:
    ran = walked({1.0, 2.0}, [1.0, 2.0, 4.0, 8.0])
    assert ran == [(1.0, False), (1.0, True), (2.0, True), (4.0, True), (4.0, True)]


def test_a_step_that_fails_once_is_run_again_and_the_climb_goes_on() -> None:
    ran = walked({1.0, 2.0, 4.0}, [1.0, 2.0, 4.0], fail_once=frozenset({2.0}))
    assert ran == [(1.0, False), (1.0, True), (2.0, True), (2.0, True), (4.0, True)]


def test_a_first_rate_that_fails_twice_is_halved_until_one_holds() -> None:
    ran = walked({2.5}, [10.0, 20.0])
    assert ran == [(10.0, False), (10.0, True), (10.0, True), (5.0, True), (5.0, True),
                   (2.5, True)]  # fmt: skip
    assert walked(set(), [10.0])[-1] == (2.5, True)  # two halvings at most


def test_the_step_that_sets_a_capacity_is_the_one_that_held_at_that_rate() -> None:
    point = {**_point(1, 1), "capacity": 5_000}
    failed = {**_step(5_000), "p99_ms": 1_500}
    point["steps"] = [failed, _step(5_000)]
    assert at_capacity(point) is point["steps"][1]
