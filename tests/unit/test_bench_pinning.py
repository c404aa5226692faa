"""The cores a curve is measured at and where each process kind runs (``bench/pinning.py``)."""

from __future__ import annotations

import os
import subprocess

import pytest

from bench.pinning import Layout, core_counts, layout, pin_tree


@pytest.mark.parametrize(
    ("available", "counts"),
    [(1, [1]), (2, [1, 2]), (3, [1, 2, 3]), (4, [1, 2, 4]), (6, [1, 2, 4, 6]),
     (16, [1, 2, 4, 8, 16]), (24, [1, 2, 4, 8, 16, 24])],
)  # fmt: skip
def test_core_counts_double_up_to_the_machines_own(available: int, counts: list[int]) -> None:
    assert core_counts(available) == counts


def test_no_cores_is_refused() -> None:
    with pytest.raises(ValueError, match="no cores"):
        core_counts(0)


def test_on_two_cores_one_core_is_apart_and_two_share_everything() -> None:
    one = layout(1, {0, 1})
    assert one == Layout(consumer=(0,), redis=(1,), kafka=(1,))
    assert not one.shared
    assert "on CPU 0; Redis primaries, Kafka broker and load generator on CPU 1" in (one.describe())
    two = layout(2, {1, 0})
    assert two == Layout(consumer=(0, 1), redis=(0, 1), kafka=(0, 1))
    assert two.shared
    assert two.describe().endswith("(sharing CPU 0,1 with the consumer)")


def test_on_a_larger_machine_redis_and_the_broker_get_cores_of_their_own() -> None:
    allowed = {2, 3, 4, 5, 6, 7, 8, 9}  # a cpuset that does not start at 0
    four = layout(4, allowed)
    assert four == Layout(consumer=(2, 3, 4, 5), redis=(6, 7), kafka=(8, 9))
    assert not four.shared
    assert "Redis primaries on CPU 6,7, Kafka broker and load generator on CPU 8,9" in (
        four.describe()
    )
    assert layout(8, allowed).shared


def test_more_cores_than_allowed_are_refused() -> None:
    with pytest.raises(ValueError, match="3 cores asked for, 2 allowed"):
        layout(3, {0, 1})


def test_pinning_a_process_moves_it_to_the_chosen_cores() -> None:
    first = min(os.sched_getaffinity(0))
    child = subprocess.Popen(["sleep", "30"])
    try:
        assert pin_tree(child.pid, {first}) >= 1
        assert os.sched_getaffinity(child.pid) == {first}
    finally:
        child.kill()
        child.wait()
