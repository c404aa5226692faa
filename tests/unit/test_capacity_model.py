"""The capacity model (``bench/capacity_model.py``): pure, over made-up costs."""

from __future__ import annotations

import math

import pytest

from bench import capacity_model as model
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
APART = model.Point(cores=1, tasks=1, busiest_primary=1.0, service_cores=1, shared=False)


def test_each_resource_limits_the_rate_it_can_carry() -> None:
    assert model.limits(COSTS, APART) == pytest.approx(
        {
            "consumer tasks": 25_000,  # 1 / 40 µs
            "driver": 100_000,
            "busiest Redis primary": 50_000,
            "consumer cores": 20_000,  # 1 / 50 µs
            "service cores": 25_000,  # 1 / (20 + 10 + 10) µs
        }
    )
    assert model.predict(COSTS, APART, 1.0) == pytest.approx((20_000, "consumer cores"))
    assert COSTS.broker_per_request == pytest.approx(1e-3)


def test_a_fixed_part_takes_its_share_of_the_core_first() -> None:
    assert Cost(50e-6, fixed=0.2).rate(1) == pytest.approx(16_000)
    assert Cost(50e-6, fixed=0.2).rate(2) == pytest.approx(36_000)
    assert Cost(50e-6, fixed=1.5).rate(1) == 0.0
    assert Cost(1e-6, 0.1) + Cost(2e-6, 0.2) == Cost(pytest.approx(3e-6), pytest.approx(0.3))


def test_one_bucket_uses_one_task_however_many_cores() -> None:
    # Amdahl's serial part: one partition with data is one task at a time.
    one = model.Point(cores=4, tasks=1, busiest_primary=1.0, service_cores=4, shared=False)
    assert model.predict(COSTS, one, 1.0) == pytest.approx((25_000, "consumer tasks"))
    four = model.Point(cores=4, tasks=4, busiest_primary=0.5, service_cores=4, shared=False)
    assert model.predict(COSTS, four, 1.0) == pytest.approx((80_000, "consumer cores"))


def test_shared_cores_carry_every_kind_at_once() -> None:
    shared = model.Point(cores=2, tasks=4, busiest_primary=0.5, service_cores=2, shared=True)
    limits = model.limits(COSTS, shared)
    assert "consumer cores" not in limits
    assert limits["shared cores"] == pytest.approx(2 / 90e-6)
    assert model.predict(COSTS, shared, 0.5)[0] == pytest.approx(1 / 90e-6)


def test_calibration_makes_its_own_point_exact() -> None:
    usable = model.calibrate(COSTS, APART, 15_000)
    assert usable == pytest.approx(0.75)
    predicted, _ = model.predict(COSTS, APART, usable)
    assert model.error(predicted, 15_000) == pytest.approx(0.0)
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


def test_a_fleets_plan_rounds_each_resource_up_at_the_usable_share() -> None:
    plan = model.plan(COSTS, 10_000, 436.0, 5.0, usable=0.5)
    updates = 4_360_000
    assert plan.updates_per_s == updates
    assert plan.requests_per_s == 50_000
    assert plan.consumer_cores == math.ceil(updates * 50e-6 / 0.5)  # 436
    assert plan.consumer_processes == math.ceil(updates * 10e-6 / 0.5)  # 88 drivers
    assert plan.redis_primaries == math.ceil(updates * 20e-6 / 0.5)  # 175
    assert plan.partitions == max(math.ceil(updates * 40e-6 / 0.5), plan.redis_primaries)
    assert plan.broker_cores == math.ceil(50_000 * 1e-3 / 0.5)  # 100
    assert model.plan(COSTS, 1, 1.0, 1.0, usable=1.0).consumer_cores == 1


def test_a_plan_whose_fixed_part_fills_a_core_is_refused() -> None:
    full = model.Costs(Cost(1e-6, 1.0), Cost(1e-6), Cost(1e-6), Cost(1e-6), Cost(1e-6), 100)
    with pytest.raises(ValueError, match="fixed part fills it"):
        model.plan(full, 10, 1.0, 1.0, usable=0.5)


def test_a_kind_that_costs_nothing_per_update_bounds_nothing() -> None:
    assert Cost(0.0).rate(2.0) == math.inf  # a broker not measured (one configured elsewhere)
    assert Cost(0.001, fixed=0.5).rate(1.5) == pytest.approx(1000.0)
