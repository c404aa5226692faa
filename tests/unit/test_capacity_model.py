"""The capacity model (``bench/capacity_model.py``): pure, over made-up costs."""

from __future__ import annotations

import dataclasses
import math

import pytest

from bench import capacity_model as model
from bench.batch_model import BatchCost, Latency, Shape
from bench.capacity_model import Cost
from bench.cpu import BENCH, BROKER, DRIVER, JVM, REDIS, WORKERS
from bench.curve_figures import PARTS

# Per update: driver 10 µs, executors 40 µs, Redis 20 µs, load 10 µs; the broker 1 ms a
# request of 100 updates (10 µs an update). No fixed parts but where a test says.
COSTS = model.Costs(
    driver=Cost(10e-6),
    executors=Cost(40e-6),
    redis=Cost(20e-6),
    broker=Cost(10e-6),
    load=Cost(10e-6),
    updates_per_request=100,
)
BATCH = BatchCost(per_batch=0.150, per_task=0.010, per_update=25e-6)
MODEL = model.Model(BATCH, Latency(scale=1.0, offset=0.0), COSTS)
# Many requests a batch (an update each): every partition has data in every batch.
APART = model.Point(
    Shape(partitions=1, cores=1, updates_per_request=1, trigger_s=0.1),
    busiest_primary=1.0,
    service_cores=1,
    shared=False,
)


def at(point: model.Point, **shape: int) -> model.Point:
    """``point`` with its shape's partitions or cores changed."""
    return dataclasses.replace(point, shape=dataclasses.replace(point.shape, **shape))


def test_the_consumer_is_bound_by_its_batches_within_the_latency_bound() -> None:
    # p99 = 2 T (T past the trigger) <= 1 s: T = 0.16 / (1 - 25 µs x r) <= 0.5 s,
    # r <= 0.68 / 25 µs = 27,200; the services' core: 1 / (20 + 10 + 10) µs = 25,000.
    found = model.limits(MODEL, APART, bound_s=1.0)
    assert found == pytest.approx(
        {"consumer batches": 27_200, "busiest Redis primary": 50_000, "service cores": 25_000},
        rel=1e-5,
    )
    assert model.predict(MODEL, APART, 1.0) == (pytest.approx(25_000), "service cores")
    looser = dataclasses.replace(MODEL, costs=dataclasses.replace(COSTS, load=Cost(0.0)))
    predicted, bound = model.predict(looser, APART, 1.0)
    assert (predicted, bound) == (pytest.approx(27_200, rel=1e-5), "consumer batches")
    assert COSTS.broker_per_request == pytest.approx(1e-3)


def test_tasks_past_the_cores_pay_their_cost_in_waves() -> None:
    one_core = at(APART, partitions=16)
    # T = (0.15 + 16 x 0.01) / (1 - 25 µs x r) <= 0.5: r <= 0.38 / 25 µs = 15,200.
    assert model.limits(MODEL, one_core, 1.0)["consumer batches"] == pytest.approx(15_200, rel=1e-5)
    four = dataclasses.replace(at(APART, cores=4, partitions=16), service_cores=4)
    # 4 waves: T = 0.19 / (1 - 25 µs x r / 4) <= 0.5: r <= 0.62 x 4 / 25 µs.
    assert model.limits(MODEL, four, 1.0)["consumer batches"] == pytest.approx(
        0.62 * 4 / 25e-6, rel=1e-5
    )
    # Amdahl's serial part: one partition with data is one task, on one core of the four.
    one_task = at(four, partitions=1)
    assert model.limits(MODEL, one_task, 1.0)["consumer batches"] == pytest.approx(
        model.limits(MODEL, APART, 1.0)["consumer batches"]
    )


def test_services_on_the_consumers_cores_slow_it_down() -> None:
    shared = dataclasses.replace(
        at(APART, cores=2, partitions=4), busiest_primary=0.5, service_cores=2, shared=True
    )
    assert model.stretch(COSTS, APART, 10_000) == 1.0  # apart: nothing taken
    # 40 µs an update of services: at 10,000 updates/s 0.4 of the 2 cores, 1.6 left for
    # the 2 its tasks would use.
    assert model.stretch(COSTS, shared, 10_000) == pytest.approx(2 / 1.6)
    assert model.stretch(COSTS, shared, 60_000) == math.inf  # nothing left
    assert "service cores" not in model.limits(MODEL, shared, 1.0)
    alone = dataclasses.replace(shared, shared=False)
    assert model.p99(MODEL, shared, 10_000) > model.p99(MODEL, alone, 10_000)


def test_a_fixed_part_takes_its_share_of_the_core_first() -> None:
    assert Cost(50e-6, fixed=0.2).rate(1) == pytest.approx(16_000)
    assert Cost(50e-6, fixed=0.2).rate(2) == pytest.approx(36_000)
    assert Cost(50e-6, fixed=1.5).rate(1) == 0.0
    assert Cost(1e-6, 0.1) + Cost(2e-6, 0.2) == Cost(pytest.approx(3e-6), pytest.approx(0.3))
    assert Cost(50e-6, fixed=0.2).cpu(2_000) == pytest.approx(0.3)


def test_the_error_is_relative_to_the_measurement() -> None:
    assert model.error(11_000, 10_000) == pytest.approx(0.1)
    assert math.isnan(model.error(1.0, 0.0))


def test_scaling_efficiency_is_capacity_against_k_times_one_core() -> None:
    assert model.efficiency(30_000, 2, 20_000) == pytest.approx(0.75)
    assert model.efficiency(40_000, 2, 20_000) == pytest.approx(1.0)
    assert model.efficiency(60_000, 4, 20_000) == pytest.approx(0.75)
    assert math.isnan(model.efficiency(1.0, 2, 0.0))


def test_a_fit_separates_the_cost_per_update_from_the_fixed_part() -> None:
    found = model.fit([(1_000, 0.25), (2_000, 0.30), (4_000, 0.40)])
    assert found == Cost(pytest.approx(50e-6), pytest.approx(0.2))
    assert model.fit([(2_000, 0.1)]) == Cost(pytest.approx(50e-6))  # one sample: all per update
    # Falling (noise): the mean; a negative intercept: the line through the origin.
    assert model.fit([(1_000, 0.2), (2_000, 0.1)]) == Cost(pytest.approx(0.15 / 1_500))
    assert model.fit([(1_000, 0.05), (2_000, 0.2)]).fixed == 0.0
    with pytest.raises(ValueError, match="no samples"):
        model.fit([])


def test_costs_from_cpu_per_second_by_kind() -> None:
    def step(rate: float) -> tuple[float, dict[str, float]]:
        per = {DRIVER: 10e-6, JVM: 30e-6, WORKERS: 10e-6, REDIS: 20e-6, BROKER: 10e-6}
        return rate, {**{k: v * rate for k, v in per.items()}, BENCH: 0.1 + 10e-6 * rate}

    costs = model.costs_of([step(1_000), step(3_000)], PARTS, 100)
    assert costs.driver.per_update == pytest.approx(10e-6)
    assert costs.executors.per_update == pytest.approx(40e-6)
    assert costs.broker_per_request == pytest.approx(1e-3)
    assert costs.load == Cost(pytest.approx(10e-6), pytest.approx(0.1))


FLEET = model.Fleet(10_000, 436.0, 5.0, largest_share=0.5)
HELD = model.Held(primary=0.5, broker=0.25)


def test_a_fleets_plan_loads_no_service_core_past_what_held() -> None:
    plan = model.plan(MODEL, FLEET, 8, HELD, bound_s=1.0, trigger_s=0.1)
    updates = 4_360_000
    assert (plan.updates_per_s, plan.requests_per_s) == (updates, 50_000)
    # 8 tasks on 8 cores: one wave, T = 0.16 / (1 - 25 µs x r / 8) <= 0.5.
    assert plan.process_capacity == pytest.approx(0.68 * 8 / 25e-6, rel=1e-5)
    assert plan.consumer_processes == math.ceil(updates / plan.process_capacity)  # 21
    assert plan.consumer_cores == 8 * plan.consumer_processes
    assert plan.redis_primaries == math.ceil(updates * 20e-6 / 0.5)  # 175
    assert plan.partitions == max(plan.consumer_cores, plan.redis_primaries)
    assert plan.broker_cores == math.ceil(50_000 * 1e-3 / 0.25)  # 200
    assert plan.largest_buckets == math.ceil(plan.partitions / 2)
    small = model.plan(MODEL, model.Fleet(1, 1.0, 1.0), 1, HELD, 1.0, 0.1)
    assert (small.consumer_cores, small.redis_primaries, small.broker_cores) == (1, 1, 1)


def test_a_plan_with_nothing_measured_to_stand_on_is_refused() -> None:
    with pytest.raises(ValueError, match="no measured step held any Redis load"):
        model.plan(MODEL, FLEET, 8, model.Held(0.0, 0.25), 1.0, 0.1)
    slow = dataclasses.replace(MODEL, batch=BatchCost(per_batch=2.0, per_task=0, per_update=1e-6))
    with pytest.raises(ValueError, match=r"carries nothing within 1\.0 s"):
        model.plan(slow, FLEET, 8, HELD, 1.0, 0.1)


def test_a_kind_that_costs_nothing_per_update_bounds_nothing() -> None:
    assert Cost(0.0).rate(2.0) == math.inf  # a broker not measured (one configured elsewhere)
    assert Cost(0.001, fixed=0.5).rate(1.5) == pytest.approx(1000.0)
