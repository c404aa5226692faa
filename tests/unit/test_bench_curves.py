"""The curves' figures (``bench/curve_figures.py``): efficiency, the model at every point,
the report's section; pure, over made-up results."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.cpu import BENCH, BROKER, DRIVER, JVM, REDIS, WORKERS
from bench.curve_figures import (
    at_capacity,
    curves,
    curves_details,
    efficiencies,
    fleet_plan,
    model_rows,
)
from bench.curves import ladder, walk
from bench.report import render


def _step(offered: float, p99_ms: float, drained: bool = True) -> dict[str, Any]:
    return {
        "offered": offered,
        "applied": offered,
        "p50_ms": p99_ms / 2,
        "p99_ms": p99_ms,
        "drain_s": 0.0 if drained else math.inf,
        "updates": 100_000,
        "messages_applied": 1_000,
        "partitions_used": 1,
        "nodes": [{"buckets": 1}, {"buckets": 0}, {"buckets": 0}],
        "cpu_s_per_million": {
            DRIVER: 10.0, JVM: 30.0, WORKERS: 10.0, REDIS: 20.0, BROKER: 10.0, BENCH: 10.0,
            "all": 90.0,
        },
    }  # fmt: skip


def _point(cores: int, buckets: int, capacity: float | None) -> dict[str, Any]:
    steps = [_step(5_000, 300), _step(10_000, 800), _step(20_000, 3_000)]
    steps = [s for s in steps if capacity is None or s["offered"] <= capacity * 2]
    for s in steps:
        s["partitions_used"] = buckets
        s["nodes"] = [{"buckets": buckets - 2 * (buckets // 3)}, {"buckets": buckets // 3},
                      {"buckets": buckets // 3}]  # fmt: skip
    shared = cores == 2
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
        "capacity": capacity,
    }


FIGURES = {
    "points": [
        _point(1, 1, 10_000),
        _point(1, 4, 10_000),
        _point(2, 1, 10_000),
        _point(2, 4, 20_000),
    ],
    "bound_ms": 1_000,
    "masters": 3,
    "partitions": 16,
    "replicas": 256,
}
RESULT = {"status": "ok", "figures": FIGURES, "scale": {}, "wall_s": 1.0}


def test_efficiency_per_bucket_count_against_its_one_core_point() -> None:
    found = {(e["buckets"], e["cores"]): e["efficiency"] for e in efficiencies(FIGURES["points"])}
    assert found == {(1, 2): pytest.approx(0.5), (4, 2): pytest.approx(1.0)}


def test_the_model_is_calibrated_at_one_bucket_on_one_core_and_run_at_every_point() -> None:
    rows = model_rows(FIGURES)
    assert [(r["cores"], r["buckets"]) for r in rows] == [(1, 1), (1, 4), (2, 1), (2, 4)]
    base = rows[0]
    assert base["calibration"]
    assert base["predicted"] == pytest.approx(10_000)
    assert base["error"] == pytest.approx(0.0)
    # 1 core, 1 bucket: the consumer's core binds (1 / 50 µs = 20,000), so usable is 0.5;
    # 2 cores shared with every kind (90 µs an update): 2 / 90 µs x 0.5 = 11,111 against
    # 10,000 measured.
    assert rows[2]["bottleneck"] == "shared cores"
    assert rows[2]["predicted"] == pytest.approx(1 / 90e-6)
    assert rows[2]["error"] == pytest.approx(1 / 90e-6 / 10_000 - 1)


def test_without_the_baseline_there_is_no_model() -> None:
    figures = {**FIGURES, "points": [_point(1, 1, None), *FIGURES["points"][1:]]}
    assert model_rows(figures) == []
    assert fleet_plan(figures) is None


def test_the_report_has_the_curves_the_efficiency_and_the_model() -> None:
    text = "\n".join(curves_details(RESULT))
    assert "| 2 | 4 | 20,000 |" in text
    assert "| 4 | 2 | 20,000 | 10,000 | 1.00 |" in text
    assert "consumer cores (calibrated here)" in text
    assert "| 2 | 1 | 10,000 | 11,111 | shared cores | +11% |" in text
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
    point = _point(1, 1, 5_000)
    point["steps"] = [_step(5_000, 1_500), _step(5_000, 400)]  # failed, then held
    assert at_capacity(point) is point["steps"][1]
