"""Where a benchmark's CPU goes (``bench/cpu.py``) and how capacity is read from its steps
(``bench/capacity.py``): pure functions over made-up process tables and steps."""

from __future__ import annotations

import math
import os

import pytest

from bench.climbs import capacity, climbs, median_capacity, sustained
from bench.cpu import (
    BENCH,
    BROKER,
    JVM,
    PLAIN,
    REDIS,
    WORKERS,
    classify,
    parse_stat,
    per_million,
    process_table,
)


def _stat(
    pid: int, name: str, parent: int, utime: int, stime: int, cutime: int, cstime: int
) -> str:
    # Fields 4.. of proc_pid_stat(5): state ppid pgrp session tty tpgid flags minflt cminflt
    # majflt cmajflt utime stime cutime cstime ...
    rest = f"S {parent} 1 1 0 -1 0 0 0 0 0 {utime} {stime} {cutime} {cstime} 20 0 1 0"
    return f"{pid} ({name}) {rest}"


def test_stat_counts_own_and_reaped_children_time() -> None:
    assert _stat(7, "java", 3, 10, 5, 2, 1).startswith("7 (java) S 3 ")
    assert parse_stat(_stat(7, "java", 3, 10, 5, 2, 1)) == (3, 18.0)


def test_stat_command_names_may_hold_spaces_and_parentheses() -> None:
    assert parse_stat(_stat(9, "Web Content) (x", 4, 1, 1, 0, 0)) == (4, 2.0)


ME = 100
SERVICES = {BROKER: 10, REDIS: 20}
PROCESSES = {
    # pid: (parent, CPU seconds, command line)
    1: (0, 0.5, "init"),
    10: (1, 40.0, "java -cp kafka.jar kafka.Kafka server.properties"),
    11: (10, 2.0, "helper of the broker"),
    20: (1, 8.0, "redis-server 127.0.0.1:6379"),
    ME: (1, 12.0, "python -m bench.capacity"),
    # The driver's class path names pyspark's jars: it is a JVM all the same.
    101: (ME, 30.0, "/usr/lib/jvm/bin/java -cp site-packages/pyspark/jars/* SparkSubmit"),
    102: (101, 6.0, "/venv/bin/python -m pyspark.daemon"),
    103: (102, 3.0, "/venv/bin/python -m pyspark.daemon pyspark.worker"),
    104: (101, 1.0, "bash spark-class"),
    105: (ME, 4.0, "python -m bench.plain_loop"),
    200: (1, 99.0, "something else on the machine"),
}


def test_each_kind_is_its_process_tree() -> None:
    totals = classify(PROCESSES, ME, SERVICES)
    assert totals == {
        BROKER: 42.0,
        REDIS: 8.0,
        BENCH: 12.0,  # its own time only: its children are kinds of their own
        JVM: 31.0,
        WORKERS: 9.0,
        PLAIN: 4.0,
    }


def test_services_this_process_started_count_once_and_cluster_nodes_are_redis() -> None:
    started = {
        **PROCESSES,
        10: (ME, 40.0, "java -cp kafka.jar kafka.Kafka server.properties"),  # a child now
        300: (ME, 2.5, "/usr/bin/redis-server 127.0.0.1:7001 [cluster]"),
        301: (ME, 1.5, "/usr/bin/redis-server 127.0.0.1:7002 [cluster]"),
    }
    totals = classify(started, ME, SERVICES)
    assert totals[BROKER] == 42.0
    assert totals[JVM] == 31.0  # the broker is not a Spark JVM
    assert totals[REDIS] == 8.0 + 4.0


def test_services_that_are_gone_or_not_recorded_count_nothing() -> None:
    totals = classify(PROCESSES, ME, {BROKER: 999})
    assert totals[BROKER] == 0.0
    assert totals[REDIS] == 0.0
    assert totals[JVM] == 31.0


def test_the_real_process_table_holds_this_process() -> None:
    found = process_table()
    parent, cpu, command = found[os.getpid()]
    assert parent == os.getppid()
    assert cpu > 0
    assert "python" in command or "pytest" in command
    assert classify(found, os.getpid(), {})[BENCH] == cpu


def test_cpu_per_million_updates_between_two_samples() -> None:
    before = {BROKER: 10.0, JVM: 5.0}
    after = {BROKER: 12.0, JVM: 11.0, WORKERS: 1.0}
    assert per_million(before, after, 500_000) == {
        BROKER: 4.0,
        JVM: 12.0,
        WORKERS: 2.0,
        "all": 18.0,
    }


def test_a_process_that_restarted_never_counts_negative_time() -> None:
    assert per_million({REDIS: 50.0}, {REDIS: 1.0}, 1_000_000) == {REDIS: 0.0, "all": 0.0}


def test_no_updates_give_no_figures() -> None:
    assert per_million({}, {BROKER: 1.0}, 0) == {}


def _step(offered: float, p99_ms: float, drain_s: float = 1.0) -> dict[str, float]:
    return {"offered": offered, "p99_ms": p99_ms, "drain_s": drain_s}


@pytest.mark.parametrize(
    ("bound", "expected"),
    [(1_000, 40_000.0), (2_000, 60_000.0), (100, None)],
)
def test_capacity_is_the_highest_sustained_rate_within_the_bound(
    bound: float, expected: float | None
) -> None:
    steps = [
        _step(20_000, 400),
        _step(40_000, 900),
        _step(60_000, 1_900),
        _step(80_000, 500, drain_s=math.inf),  # fast probes, but the load was never applied
    ]
    assert capacity(steps, bound) == expected


def test_a_step_is_sustained_only_when_everything_was_applied() -> None:
    assert sustained(_step(1, 1, drain_s=0.0))
    assert not sustained(_step(1, 1, drain_s=math.inf))


def test_the_median_capacity_counts_a_climb_that_sustained_nothing_as_zero() -> None:
    def climb(number: int, p99s: list[float]) -> list[dict[str, float]]:
        rates = (20_000, 40_000, 60_000)
        return [{**_step(r, p99), "climb": number} for r, p99 in zip(rates, p99s, strict=False)]

    steps = climb(0, [400, 900, 1_500]) + climb(1, [1_200]) + climb(2, [300, 500, 800])
    assert [capacity(c, 1_000) for c in climbs(steps)] == [40_000.0, None, 60_000.0]
    assert median_capacity(steps, 1_000) == 40_000.0
    assert median_capacity(climb(0, [1_200]) + climb(1, [1_300]) + steps[-3:], 1_000) is None


def test_a_spark_driver_process_of_its_own_counts_apart_from_its_jvm_and_workers() -> None:
    # bench/consumer_process.py: a Python child that started the JVM (its workers below it).
    from bench.cpu import DRIVER

    own = {
        ME: (1, 12.0, "python -m bench.curves"),
        400: (ME, 7.0, "/venv/bin/python -c from multiprocessing.spawn import spawn_main"),
        401: (400, 30.0, "/usr/lib/jvm/bin/java -cp pyspark/jars/* SparkSubmit"),
        402: (401, 6.0, "/venv/bin/python -m pyspark.daemon"),
        403: (ME, 0.5, "/venv/bin/python -c resource_tracker"),  # no JVM below: plain
    }
    totals = classify(own, ME, {})
    assert totals[DRIVER] == 7.0
    assert totals[JVM] == 30.0
    assert totals[WORKERS] == 6.0
    assert totals[PLAIN] == 0.5
    assert totals[BENCH] == 12.0


def test_without_a_driver_process_its_kind_is_not_in_the_totals() -> None:
    from bench.cpu import DRIVER

    assert DRIVER not in classify(PROCESSES, ME, SERVICES)
