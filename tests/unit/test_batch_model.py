"""The consumer's batch-time model (``bench/batch_model.py``): pure, over made-up costs."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.batch_model import (
    BatchCost,
    BatchSample,
    Latency,
    Shape,
    batch_time,
    fit_cost,
    fit_latency,
    highest,
    least_squares,
    most_rate,
    steady_time,
    tasks_with_data,
)

# 150 ms a batch, 10 ms a task, 24 µs an update of which 4 µs serial.
COST = BatchCost(per_batch=0.150, per_task=0.010, per_update=24e-6, serial=4e-6)
ONE = Shape(partitions=1, cores=1, updates_per_request=100, trigger_s=0.1)


def test_on_one_core_every_task_is_paid_one_after_another() -> None:
    assert COST.time(0, tasks=1, cores=1) == pytest.approx(0.160)
    assert COST.time(0, tasks=16, cores=1) == pytest.approx(0.310)
    assert COST.time(10_000, tasks=16, cores=1) == pytest.approx(0.310 + 0.240)


def test_more_cores_run_tasks_side_by_side_and_spread_all_but_the_serial_part() -> None:
    assert COST.time(0, tasks=16, cores=2) == pytest.approx(0.150 + 8 * 0.010)
    per_update = COST.time(1, 16, 2) - COST.time(0, 16, 2)
    assert per_update == pytest.approx(4e-6 + 20e-6 / 2)
    # One task uses one core however many there are (Amdahl's serial part).
    assert COST.time(5_000, tasks=1, cores=8) == COST.time(5_000, tasks=1, cores=1)


def test_spark_plans_a_task_only_for_a_partition_with_data() -> None:
    assert tasks_with_data(1, 7) == 1.0
    assert tasks_with_data(16, 1) == pytest.approx(1.0)
    assert tasks_with_data(16, 7) == pytest.approx(16 * (1 - (15 / 16) ** 7))  # about 6
    assert tasks_with_data(16, 1_000) == pytest.approx(16.0)
    sixteen = Shape(partitions=16, cores=1, updates_per_request=100, trigger_s=0.1)
    assert batch_time(COST, sixteen, 700) == pytest.approx(
        COST.time(700, tasks_with_data(16, 7), 1)
    )


def test_batches_start_on_the_trigger_until_they_take_longer() -> None:
    slow_trigger = Shape(partitions=1, cores=1, updates_per_request=100, trigger_s=1.0)
    light = steady_time(COST, slow_trigger, 1_000)
    assert light == pytest.approx(0.160 + 24e-6 * 1_000)  # a second's updates, on time
    busy = steady_time(COST, ONE, 20_000)
    assert busy == pytest.approx(0.160 / (1 - 24e-6 * 20_000))
    assert steady_time(COST, ONE, 1 / 24e-6) == math.inf
    assert most_rate(COST, ONE) == pytest.approx(1 / 24e-6)
    slowed = steady_time(COST, ONE, 20_000, stretch=1.5)
    assert slowed == pytest.approx(1.5 * 0.160 / (1 - 1.5 * 24e-6 * 20_000))


@given(
    rate=st.floats(min_value=1.0, max_value=40_000.0),
    partitions=st.integers(min_value=1, max_value=64),
    cores=st.integers(min_value=1, max_value=16),
    trigger_s=st.floats(min_value=0.01, max_value=2.0),
)
def test_a_steady_batch_carries_what_came_in_while_the_one_before_ran(
    rate: float, partitions: int, cores: int, trigger_s: float
) -> None:
    shape = Shape(partitions, cores, updates_per_request=100, trigger_s=trigger_s)
    batch = steady_time(COST, shape, rate)
    if math.isfinite(batch):
        interval = max(batch, trigger_s)
        assert batch == pytest.approx(batch_time(COST, shape, rate * interval), rel=1e-6)
    else:
        assert rate >= most_rate(COST, shape) * (1 - 1e-6)


def test_a_fit_tells_a_batch_a_task_and_an_update_apart() -> None:
    samples = [
        BatchSample(tasks, updates, COST.time(updates, tasks, cores=1))
        for tasks in (1.0, 3.2, 4.0)
        for updates in (500, 2_000, 7_000)
    ]
    found = fit_cost(samples, serial=4e-6)
    assert found.per_batch == pytest.approx(0.150)
    assert found.per_task == pytest.approx(0.010)
    assert found.per_update == pytest.approx(24e-6)
    assert found.serial == pytest.approx(4e-6)


def test_a_fit_over_one_task_count_gives_its_fixed_time_to_the_batch() -> None:
    samples = [BatchSample(1, n, COST.time(n, 1, 1)) for n in (500, 7_000)]
    found = fit_cost(samples, serial=1.0)  # more serial than all: capped at all of it
    assert (found.per_batch, found.per_task) == (pytest.approx(0.160), 0.0)
    assert found.per_update == pytest.approx(24e-6)
    assert found.serial == found.per_update


def test_noise_cannot_make_a_cost_negative() -> None:
    # The 4-task point faster than the 1-task one, a batch's time falling with its size.
    samples = [
        BatchSample(1, 500, 0.20),
        BatchSample(1, 5_000, 0.18),
        BatchSample(4, 500, 0.15),
        BatchSample(4, 5_000, 0.14),
    ]
    found = fit_cost(samples)
    assert found.per_task == 0.0
    assert found.per_update == 0.0
    assert found.per_batch == pytest.approx((0.19 + 0.145) / 2)
    with pytest.raises(ValueError, match="no steps"):
        fit_cost([])


def test_least_squares_leaves_a_term_the_others_explain_at_zero() -> None:
    ys = [1.0 + 2.0 * x for x in (1.0, 2.0, 3.0)]
    found = least_squares({"one": [1.0] * 3, "x": [1.0, 2.0, 3.0], "twice": [2.0] * 3}, ys)
    assert found["x"] == pytest.approx(2.0)
    assert found["one"] + 2 * found["twice"] == pytest.approx(1.0)
    assert found["twice"] == 0.0


def test_latency_is_fitted_against_the_interval_plus_the_batch() -> None:
    line = Latency(scale=1.2, offset=0.05)
    assert line.p99(0.3, trigger_s=0.1) == pytest.approx(1.2 * 0.6 + 0.05)
    assert line.p99(0.05, trigger_s=0.1) == pytest.approx(1.2 * 0.15 + 0.05)
    found = fit_latency([(x, line.p99(x / 2, 0.0)) for x in (0.2, 0.4, 0.9)])
    assert found == Latency(pytest.approx(1.2), pytest.approx(0.05))
    assert fit_latency([(0.4, 0.5)]) == Latency(1.0, pytest.approx(0.1))  # one step
    with pytest.raises(ValueError, match="no steps"):
        fit_latency([])


def test_the_highest_rate_that_holds() -> None:
    assert highest(lambda rate: rate <= 1234.5, 10_000) == pytest.approx(1234.5, rel=1e-5)
    assert highest(lambda rate: False, 10_000) == 0.0
    assert highest(lambda rate: True, math.inf) == 0.0
