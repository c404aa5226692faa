"""The figures of ``bench.buckets`` from made-up results (no services): the busiest
primary's share, how far a cut trails its buckets, and the report's rows and table."""

from __future__ import annotations

import math
from typing import Any

import pytest

from bench.bucket_figures import buckets, buckets_details, busiest_share, cut_trail, passed_at
from bench.report import render


@pytest.mark.parametrize(
    ("per_node", "share"),
    [([100, 100, 100], 1.0), ([300, 0, 0], 3.0), ([150, 75, 75], 1.5), ([], math.nan)],
)
def test_the_busiest_share_is_against_an_even_split(per_node: list[float], share: float) -> None:
    assert busiest_share(per_node) == pytest.approx(share, nan_ok=True)


HISTORY = [(1.0, (5, 7)), (1.1, (6, 7)), (1.2, (8, 9))]


def test_a_bucket_went_past_a_time_after_the_last_reading_at_or_below_it() -> None:
    assert passed_at(HISTORY, 0, 6) == 1.1
    assert passed_at(HISTORY, 1, 7) == 1.1
    assert passed_at(HISTORY, 0, 2) == 1.0  # before every reading: the first one


def test_a_cut_at_every_latest_time_trails_by_nothing() -> None:
    assert cut_trail(HISTORY, (8, 9), (8, 9), 1.2) == (0, 0.0)


def test_a_cut_trails_by_its_worst_bucket() -> None:
    times, ms = cut_trail(HISTORY, (6, 9), (8, 9), 1.25)
    assert times == 2
    assert ms == pytest.approx(150.0)  # bucket 0 was still at 6 at 1.1


def test_a_known_passing_time_wins_over_the_bound() -> None:
    assert cut_trail(HISTORY, (6, 9), (8, 9), 1.25, {0: 30.0}) == (2, pytest.approx(30.0))


def _config(
    buckets: int, commands: list[int], applied: float, trail_ms: float, grouped: int = 0
) -> dict[str, Any]:
    shares = busiest_share(commands)
    return {
        "buckets": buckets,
        "grouped_every": grouped,
        "offered": 20_000.0,
        "applied": applied,
        "p50_ms": 200.0,
        "p99_ms": 400.0,
        "cpu_s_per_million": {"all": 100.0},
        "nodes": [{"commands": c, "buckets": 0} for c in commands],
        "busiest_share": shares,
        "fcall_busiest_share": shares,
        "partitions_used": min(buckets, 16),
        "cut": {
            "samples": 300,
            "trail_times_p50": 0.0,
            "trail_times_p99": 2.0,
            "trail_ms_p50": 1.0,
            "trail_ms_p99": trail_ms,
            "read_ms_p50": 2.0,
            "read_ms_p99": 9.0,
            "per_bucket_ms_p50": 2.0 * buckets,
            "per_bucket_ms_p99": 9.0 * buckets,
        },
    }


RESULT = {
    "status": "ok",
    "wall_s": 240.0,
    "scale": {"bucket_counts": "1,4,16"},
    "figures": {
        "schema": "arrangement_sizes",
        "masters": 3,
        "replicas": 256,
        "partitions": 16,
        "cut_every_ms": 100.0,
        "configs": [
            _config(1, [90, 5_000, 100], 19_000.0, 0.0),
            _config(4, [3_400, 1_800, 1_700], 19_500.0, 120.0),
            _config(16, [2_000, 1_800, 1_700], 19_900.0, 150.0),
            _config(16, [2_000, 1_800, 1_700], 19_800.0, 450.0, grouped=20),
        ],
    },
}


def test_each_bucket_count_is_compared_with_one_bucket() -> None:
    rows = buckets(RESULT)
    # Against one bucket, but the cut read: against one call per bucket, in the same run.
    assert {row.baseline_name for row in rows} == {"1 bucket", "one call per bucket"}
    reads = [row for row in rows if row.name.startswith("cut read")]
    assert [(row.value, row.baseline_name) for row in reads][1] == (9.0, "one call per bucket")
    assert reads[1].ratio == pytest.approx(9.0 / (9.0 * 16))
    applied = {row.name: row for row in rows if row.name.startswith("applied")}
    assert applied["applied rate, 16 buckets"].ratio == pytest.approx(19_900 / 19_000)
    assert not any("1 bucket" in row.name for row in rows)
    cut = [row for row in rows if row.name.startswith("consistent cut")]
    assert [row.value for row in cut] == [120.0, 150.0, 450.0]
    assert cut[-1].name.endswith("16 buckets, 1 in 20 requests grouped")


def test_the_even_split_is_held_to_its_target_from_sixteen_buckets_on() -> None:
    shares = {row.name: row for row in buckets(RESULT) if "busiest" in row.name}
    sixteen = shares["busiest primary's Redis commands / an even split, 16 buckets"]
    assert sixteen.value == pytest.approx(2_000 / (5_500 / 3))
    assert sixteen.verdict == "met"
    assert shares["busiest primary's Redis commands / an even split, 4 buckets"].verdict == ""


def test_the_report_has_a_table_of_every_bucket_count() -> None:
    lines = buckets_details(RESULT)
    rows = [line for line in lines if line.startswith("| ") and line[2].isdigit()]
    assert [row.split(" | ")[0] for row in rows] == [
        "| 1 bucket",
        "| 4 buckets",
        "| 16 buckets",
        "| 16 buckets, 1 in 20 requests grouped",
    ]
    page = render({"benchmarks": {"buckets": RESULT}}, {})
    assert "### Buckets on a Redis Cluster, per bucket count" in page
    assert "`buckets`" in page
