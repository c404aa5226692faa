"""The replica_metrics source: parsing, rows, and retract-old/insert-new updates."""

from __future__ import annotations

from collections.abc import Callable, Iterator

from producers.resources import (
    REPLICA_METRICS,
    ResourceSource,
    Sample,
    metrics_row,
    parse_rss_bytes,
    rss_bytes,
    sample,
)

STAT = "4242 (my (odd) name) S 1 4242 4242 0 -1 4194560 900 0 0 0 12 3 0 0 20 0 3 0 777 " + (
    "123456789 2500 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0"
)


def scripted(*samples: Sample) -> Callable[[], Sample]:
    readings: Iterator[Sample] = iter(samples)
    return lambda: next(readings)


def test_parse_rss_counts_fields_after_the_command_name() -> None:
    assert parse_rss_bytes(STAT, page_size=4096) == 2500 * 4096


def test_reads_this_process() -> None:
    assert rss_bytes() > 1_000_000
    first, second = sample(), sample()
    assert second.wall_s >= first.wall_s
    assert second.cpu_s >= first.cpu_s > 0


def test_cpu_in_cores() -> None:
    assert metrics_row(Sample(10.0, 1.0, 0), Sample(12.0, 2.5, 7)) == (0.75, 7)
    assert metrics_row(Sample(10.0, 1.0, 0), Sample(11.0, 3.0, 7)) == (2.0, 7)
    assert metrics_row(Sample(10.0, 1.0, 0), Sample(10.0, 1.0, 7)) == (0.0, 7)


def test_snapshot_then_changes_retract_old_and_insert_new() -> None:
    source = ResourceSource(
        scripted(Sample(0, 0, 100), Sample(1, 0.5, 100), Sample(2, 0.5, 200), Sample(3, 0.5, 200))
    )
    assert source.snapshot() == {REPLICA_METRICS: [((0.5, 100), 1)]}
    assert source.step() == {REPLICA_METRICS: [((0.5, 100), -1), ((0.0, 200), 1)]}
    assert source.state() == {REPLICA_METRICS: {(0.0, 200): 1}}
    assert source.step() == {REPLICA_METRICS: []}
    assert source.state() == {REPLICA_METRICS: {(0.0, 200): 1}}


def test_step_before_snapshot_only_inserts() -> None:
    source = ResourceSource(scripted(Sample(0, 0, 100), Sample(1, 0.25, 100)))
    assert source.state() == {REPLICA_METRICS: {}}
    assert source.step() == {REPLICA_METRICS: [((0.25, 100), 1)]}


def test_the_real_source_holds_one_row() -> None:
    source = ResourceSource()
    source.snapshot()
    for _ in range(3):
        source.step()
    (row,) = source.state()[REPLICA_METRICS]
    cpu, memory = row
    assert isinstance(cpu, float)
    assert memory > 0
