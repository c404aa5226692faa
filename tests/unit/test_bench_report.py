"""The benchmark report's rendering, from a fixture of one run's results (no services).

Nothing here is timed: the figures are made up, and the tests check that every number in
the report comes from them, with the right ratios and target verdicts.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from bench import plots
from bench.climbs import median_capacity
from bench.figures import Figure, figures_of
from bench.report import GENERATED_MARK, command, number, ratio, render
from bench.scale_figures import growth
from bench.targets import Target
from tests.docs.markdown import is_generated_page
from tests.unit.test_bench_curves import FIGURES as CURVES
from tests.unit.test_bench_curves import SCALE as CURVES_SCALE

MACHINE = {
    "date": "2030-01-02T03:04:05+00:00",
    "cpu_model": "Test CPU 9000",
    "cores": 2,
    "memory_gib": 8.0,
    "os": "TestOS 1 (kernel 6.0)",
    "python": "3.11.7",
    "java": 'openjdk version "17.0.15"',
    "redis": "7.0.15",
    "kafka": "4.1.1 (local KRaft broker)",
    "spark": "4.0.0",
    "load_average": [1.5, 1.0, 0.5],
    "git": {"commit": "abc123", "dirty": True},
}


def _path(applied: float, p50: float, p99: float, drain_s: float) -> dict[str, Any]:
    return {
        "offered": 60_000.0,
        "applied": applied,
        "p50_ms": p50,
        "p99_ms": p99,
        "max_ms": p99 + 100,
        "lag": 10,
        "drain_s": drain_s,
        "busy": 0.5,
        "probes": 4,
        "unseen_probes": 0,
        "latencies_ms": [p50 / 2, p50, p99, p99 + 100],
    }


def _probes(p50: float, p99: float, max_ms: float, busy: int = 0) -> dict[str, Any]:
    return {
        "probes": 400,
        "p50_ms": p50,
        "p99_ms": p99,
        "max_ms": max_ms,
        "max_round_trip_ms": max_ms - 1,
        "busy_replies": busy,
    }


def _reader_latency(rows_deleted: int) -> dict[str, Any]:
    """Idle, applying (meets both targets) and deleting (misses both) phases."""
    idle = {"PING": _probes(0.2, 1.0, 4.0), "point query": _probes(0.25, 1.25, 5.0)}
    applying = {"PING": _probes(2.0, 20.0, 100.0), "point query": _probes(2.5, 25.0, 200.0)}
    deleting = {
        "PING": _probes(900.0, 1_800.0, 2_000.0),
        "point query": _probes(900, 1_900, 6_000, 7),
    }
    return {
        "interval_ms": 5.0,
        "commands": ["PING", "point query"],
        "targets": {"p99_ms": 50.0, "max_ms": 250.0},
        "phases": {
            "idle": {**idle, "probed_s": 10.0, "load_average": [1.5, 1.25, 1.0]},
            "applying": {
                **applying,
                "probed_s": 10.0,
                "applied_updates_per_s": 150_000.0,
                "apply_calls": 30,
                "requests_per_call": 50,
                "function_calls": 300,
                "function_ms": 6_000.0,
            },
            "deleting": {
                **deleting,
                "probed_s": 2.0,
                "fill_s": 40.0,
                "delete_ms": 2_000.0,
                "rows_deleted": rows_deleted,
                "function_calls": 1,
                "function_ms": 1_950.0,
            },
        },
    }


def _step(offered: float, p99: float, drain_s: float, cpu: dict[str, float]) -> dict[str, Any]:
    """One capacity step (``bench.capacity.step_figures``)."""
    figures = _path(offered, p99 / 4, p99, drain_s)
    del figures["latencies_ms"]
    cpu_all = {**cpu, "all": sum(cpu.values())}
    return {**figures, "offered": offered, "cpu_s_per_million": cpu_all, "updates": 1_000_000}


def _capacity() -> dict[str, Any]:
    """Spark sustains 20k and 40k (p99 800 ms, then 1,600 ms) and falls behind at 60k; the
    plain loop sustains all three within 1 s."""
    spark_cpu = {"Kafka broker": 5.0, "Spark JVM": 30.0, "Spark Python workers": 15.0}
    plain_cpu = {"Kafka broker": 5.0, "Spark JVM": 0.0, "Spark Python workers": 0.0}
    spark = [
        _step(20_000.0, 800.0, 0.5, spark_cpu),
        _step(40_000.0, 1_600.0, 1.0, {**spark_cpu, "Spark JVM": 20.0}),
        _step(60_000.0, 9_000.0, float("inf"), spark_cpu),
    ]
    plain = [_step(rate, 150.0, 0.1, plain_cpu) for rate in (20_000.0, 40_000.0, 60_000.0)]
    on_cluster = [_step(20_000.0, 1_200.0, 0.5, {**spark_cpu, "Redis": 10.0})]
    return {
        "paths": {"plain": plain, "spark": spark, "redis_cluster": on_cluster},
        "labels": {
            "plain": "plain loop (baseline)",
            "spark": "Spark local[2]",
            "redis_cluster": "Spark local[2], Redis Cluster",
        },
        "capacity": {
            "plain": {"1000": 60_000.0, "2000": 60_000.0},
            "spark": {"1000": 20_000.0, "2000": 40_000.0},
            "redis_cluster": {"1000": None, "2000": 20_000.0},
        },
    }


def _size(rows: int, point_ms: float, full_ms: float, bytes_per_row: float) -> dict[str, Any]:
    """One size of ``bench.row_scale``: the plain hash takes half the time and 80 bytes/row."""
    return {
        "rows": rows,
        "load_rows_per_s": 50_000.0,
        "point": {"ours": {"p50_ms": point_ms, "p99_ms": 3 * point_ms},
                  "plain": {"p50_ms": point_ms / 2, "p99_ms": point_ms}},
        "full": {"ours_ms": full_ms, "plain_ms": full_ms / 2},
        "bytes_per_row": bytes_per_row,
        "plain_bytes_per_row": 80.0,
        "log_bytes_per_row": bytes_per_row / 4,
    }  # fmt: skip


def _shape(partitions: int, collections: int, applied: float) -> dict[str, Any]:
    """One point of ``bench.spark_scale``: 80,000 updates/s offered."""
    return {
        "partitions": partitions,
        "collections": collections,
        "offered": 80_000.0,
        "applied": applied,
        "p99_ms": 5_000.0,
        "drain_s": 10.0,
        "cpu_s_per_million": {"all": 2e6 / applied},
    }


def _ok(scale: dict[str, Any], figures: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "wall_s": 12.5, "run_s": 11.0, "scale": scale, "figures": figures}


def fixture() -> dict[str, Any]:
    """One run's results: every benchmark, with figures chosen to meet and miss targets."""
    samples = [
        {
            "t_s": t,
            "live": 10,
            "one_to_one": {"primary": 10, "index": 10},
            "one_to_one_baseline": {"primary": 10, "index": 10 + 5 * t},
            "one_to_many": {"primary": 10, "index": 10, "elements": 40},
            "one_to_many_baseline": {"primary": 10, "index": 40, "elements": 40},
        }
        for t in range(3)
    ]
    benchmarks = {
        "ttl_index": _ok(
            {"keys": 10, "steps": 3},
            {
                "samples": samples,
                "cleanup_work": {
                    "one_to_one": 5,
                    "one_to_one_baseline": 50,
                    "one_to_many": 40,
                    "one_to_many_baseline": 160,
                },
                "peak_index_per_key": {
                    "one_to_one": 1.0,
                    "one_to_one_baseline": 2.0,
                    "one_to_many": 1.0,
                    "one_to_many_baseline": 4.0,
                },
            },
        ),
        "store_apply": _ok(
            {"requests": 200, "group": 50, "naive_requests": 20},
            {
                "store_updates_per_s": 120_000.0,
                "pipelined_updates_per_s": 100_000.0,
                "naive_updates_per_s": 20_000.0,
                "updates_per_request": 1000,
                "cancelling_fraction": 0.5,
            },
        ),
        "store_delete": _ok(
            {"sizes": "10000,100000", "repeats": 5, "scan_max": None},
            {
                "sizes": [
                    {"rows": 10_000, "indexed_ms": 20.0, "scan_ms": 40.0, "build_s": 1.0},
                    {"rows": 100_000, "indexed_ms": 25.0, "scan_ms": None, "build_s": 2.0},
                ],
                "rows_deleted": 1000,
            },
        ),
        "row_scale": _ok(
            {"sizes": "10000,1000000", "queries": 300, "repeats": 3, "seed": 1},
            {
                "sizes": [_size(10_000, 2.0, 10.0, 200.0), _size(1_000_000, 2.2, 1_000.0, 150.0)],
                "replica_rows": 1000,
            },
        ),
        "fleet_scale": _ok(
            {"replicas": "3,300", "collections": "1,100", "updates": 300_000},
            {
                "replicas": [
                    {
                        "replicas": 3,
                        "updates_per_s": 40_000.0,
                        "baseline_updates_per_s": 50_000.0,
                        "lease_check_ms": 5.0,
                    },
                    {
                        "replicas": 300,
                        "updates_per_s": 20_000.0,
                        "baseline_updates_per_s": 50_000.0,
                        "lease_check_ms": 50.0,
                    },
                ],
                "baseline_lease_check_ms": 4.0,
                "collections": [
                    {
                        "collections": 1,
                        "updates_per_s": 40_000.0,
                        "baseline_updates_per_s": 50_000.0,
                    },
                    {
                        "collections": 100,
                        "updates_per_s": 36_000.0,
                        "baseline_updates_per_s": 45_000.0,
                    },
                ],
            },
        ),
        "spark_scale": _ok(
            {"rate": 80_000.0, "partition_counts": "1,4", "collection_counts": "1,100"},
            {
                "baseline": _shape(4, 5, 40_000.0),
                "partitions": [_shape(1, 5, 20_000.0), _shape(4, 5, 40_000.0)],
                "collections": [_shape(4, 1, 79_000.0), _shape(4, 100, 10_000.0)],
            },
        ),
        "reader_latency": _ok(
            {"rows": 1_000_000, "phase_s": 10.0, "interval_ms": 5.0, "group": 50},
            _reader_latency(1_000_000),
        ),
        "expiration": _ok(
            {"rows": 1000},
            {
                "cases": [
                    {"validity_days": 30, "offset_days": None, "scheduled": 1000},
                    {"validity_days": 30, "offset_days": 20, "scheduled": 250},
                ]
            },
        ),
        "cancel_to_quiet": _ok(
            {"rows": 1000, "repeats": 2},
            {
                "snapshot_rows": 1000,
                "runs": [
                    {"scenario": "queue 100k", "baseline_s": 4.0, "quiet_ms": 2.0},
                    {"scenario": "queue 100k", "baseline_s": 4.0, "quiet_ms": 3.0},
                    {
                        "scenario": "held",
                        "baseline_s": None,
                        "quiet_ms": 150.0,
                        "report_floor_ms": 40.0,
                    },
                    {
                        "scenario": "held",
                        "baseline_s": None,
                        "quiet_ms": 50.0,
                        "report_floor_ms": 60.0,
                    },
                ],
            },
        ),
        "decode": _ok(
            {"requests": 100, "updates": 25, "repeats": 1},
            {
                "variants": {
                    "fastavro": {"label": "A", "time_s": 1.0, "updates_per_s": 3000.0},
                    "from_avro_jvm": {"label": "B", "time_s": 0.5, "updates_per_s": 6000.0},
                    "from_avro_python": {"label": "C", "time_s": 2.0, "updates_per_s": 1500.0},
                }
            },
        ),
        "e2e": _ok(
            {"rate": 60_000.0, "duration": 30.0, "trigger_ms": 500},
            {
                "paths": {
                    "spark": _path(55_000.0, 800.0, 3_000.0, 0.4),
                    "plain": _path(59_000.0, 100.0, 200.0, 0.1),
                },
                "both_kept_up": True,
                "targets": [],
            },
        ),
        "capacity": _ok({"rates": "20000,40000,60000", "duration": 15.0}, _capacity()),
        "curves": _ok(dict(CURVES_SCALE), copy.deepcopy(CURVES)),
    }
    return {
        "quick": False,
        "total_s": 600.0,
        "machine": MACHINE,
        "load_end": [2.0, 1.5, 1.0],
        "benchmarks": benchmarks,
    }


def _row(markdown: str, *fragments: str) -> str:
    """The one table row holding every fragment."""
    rows = [
        line
        for line in markdown.splitlines()
        if line.startswith("|") and all(f in line for f in fragments)
    ]
    assert len(rows) == 1, rows
    return rows[0]


def _cells(row: str) -> list[str]:
    return [cell.strip() for cell in row.strip("|").split(" | ")]


def test_machine_section_names_everything_the_run_recorded() -> None:
    markdown = render(fixture(), {})
    expected = ["Test CPU 9000", "8.0 GiB", "TestOS 1", "3.11.7", "17.0.15", "7.0.15", "4.1.1"]
    expected += ["4.0.0", "2030-01-02", "1.50, 1.00, 0.50", "2.00, 1.50, 1.00"]
    for fragment in expected:
        assert fragment in markdown
    assert "abc123 plus uncommitted changes" in markdown


def test_ratio_is_value_over_the_baseline_of_the_same_run() -> None:
    markdown = render(fixture(), {})
    pipelined = _cells(_row(markdown, "store_apply", "pipelined"))
    assert pipelined[2] == "120,000 updates/s"
    assert pipelined[3] == "100,000 updates/s (HINCRBY per update, pipelined)"
    assert pipelined[4] == "1.2x"
    naive = _cells(_row(markdown, "store_apply", "one round trip"))
    assert naive[4] == "6x"
    assert _cells(_row(markdown, "valid 30 d"))[4] == "0.25x"
    assert _cells(_row(markdown, "| A |"))[4] == "2x"  # A 3,000 over C 1,500


def test_targets_are_marked_met_or_missed() -> None:
    markdown = render(fixture(), {})
    apply_row = _cells(_row(markdown, "store_apply", "pipelined"))
    assert apply_row[5:] == [">= 100,000 updates/s", "met"]
    p99 = _cells(_row(markdown, "p99 publish-to-visible latency"))
    assert p99[2] == "3,000 ms"
    assert p99[5:] == ["<= 2,000 ms", "**MISSED**"]
    assert _cells(_row(markdown, "applied updates/s"))[6] == "met"  # 55,000 at 60,000 offered
    assert _cells(_row(markdown, "queue 100k"))[6] == "met"  # worst of 2.0 and 3.0 ms
    held = _cells(_row(markdown, "held"))
    assert held[2] == "150 ms"  # the worst run, not the median
    assert held[3].startswith("60 ms (worst of 2: a bare confluent-kafka producer")
    assert held[4] == "2.5x"
    assert held[6] == "**MISSED**"
    assert _cells(_row(markdown, "one-to-one (leases): peak"))[6] == "met"


def test_a_target_the_scale_cannot_test_is_not_applicable() -> None:
    results = fixture()
    markdown = render(results, {})
    largest = _cells(_row(markdown, "indexed delete of 1,000 rows at 100,000 rows"))
    assert largest[5:] == ["< 50 ms", "n/a"]
    assert "target is for 1,000,000 rows" in largest[1]
    assert _cells(_row(markdown, "delete of 1,000 rows at 10,000 rows"))[5:] == ["", ""]
    results["benchmarks"]["e2e"]["scale"]["rate"] = 5_000.0
    slow = _cells(_row(render(results, {}), "applied updates/s"))
    assert slow[6] == "n/a"
    assert "below the target" in slow[1]


def test_a_missing_scan_is_shown_as_such() -> None:
    row = _cells(_row(render(fixture(), {}), "delete of 1,000 rows at 100,000 rows"))
    assert row[3] == ""
    assert row[4] == "-"


def test_every_value_comes_from_the_results() -> None:
    results = fixture()
    results["benchmarks"]["store_apply"]["figures"]["store_updates_per_s"] = 80_000.0
    row = _cells(_row(render(results, {}), "store_apply", "pipelined"))
    assert row[2] == "80,000 updates/s"
    assert row[4] == "0.8x"
    assert row[6] == "**MISSED**"


def test_plots_are_linked_only_when_drawn() -> None:
    markdown = render(fixture(), {"e2e": "benchmarks/e2e.png"})
    assert "](benchmarks/e2e.png)" in markdown
    assert "store_apply.png" not in markdown


def test_failed_benchmark_is_reported_with_its_log_and_no_figures() -> None:
    results = fixture()
    results["benchmarks"]["decode"] = {
        "status": "failed (exit 1)",
        "wall_s": 3.0,
        "scale": {"requests": 100},
        "error": "Traceback: boom",
    }
    markdown = render(results, {})
    assert "## Failures" in markdown
    assert "Traceback: boom" in markdown
    assert "| `decode` | failed (exit 1) |" in markdown
    assert not any(f.benchmark == "decode" for f in figures_of(results["benchmarks"]))


def test_scale_table_shows_how_to_rerun_each_benchmark() -> None:
    markdown = render(fixture(), {})
    assert "`python -m bench.store_delete --sizes 10000,100000 --repeats 5`" in markdown
    assert command("e2e", {"rate": 5.0, "trigger_ms": 500}) == (
        "python -m bench.e2e --rate 5.0 --trigger-ms 500"
    )


def test_quick_run_is_flagged() -> None:
    results = fixture()
    assert "Quick run" not in render(results, {})
    results["quick"] = True
    assert "Quick run" in render(results, {})
    assert "bench run --quick" in render(results, {})


def test_a_benchmark_run_again_alone_is_named_with_its_commit() -> None:
    results = fixture()
    assert "run again alone" not in render(results, {})
    results["reruns"] = {"decode": {"commit": "b93eaab4401768", "date": "2026-12-03T14:25"}}
    assert "> **`decode` was run again alone** after the run, at commit b93eaab " in (
        render(results, {})
    )


def test_a_page_rendered_later_names_the_commit_that_computed_it() -> None:
    results = fixture()
    results["machine"]["git"] = {"commit": "5ef6aa1595a5", "dirty": False}
    results["rendered_at"] = {"commit": "5ef6aa1595a5", "dirty": False}
    assert "Rendered from the run's results" not in render(results, {})
    results["rendered_at"] = {"commit": "01061f0aaaaa", "dirty": False}
    assert "> **Rendered from the run's results at commit 01061f0**" in render(results, {})


@pytest.mark.parametrize(
    ("value", "unit", "text"),
    [
        (None, "ms", "-"),
        (float("nan"), "", "-"),
        (1234.5, "ms", "1,234 ms"),
        (2.345, "", "2.35"),
        (0.012345, "ms", "0.0123 ms"),
        (5.0, "", "5"),
        (float("inf"), "s", "∞"),
    ],
)
def test_numbers(value: float | None, unit: str, text: str) -> None:
    assert number(value, unit) == text


def test_verdicts() -> None:
    target = Target("<=", 10, "ms")
    assert Figure("b", "f", 10, "ms", target=target).verdict == "met"
    assert Figure("b", "f", 11, "ms", target=target).verdict == "MISSED"
    assert Figure("b", "f", float("nan"), "ms", target=target).verdict == "n/a"
    assert Figure("b", "f", 1, "ms", target=target, tested=False).verdict == "n/a"
    assert Figure("b", "f", 1, "ms").verdict == ""
    assert Figure("b", "f", 1, "ms", baseline=0).ratio is None
    assert ratio(None) == "-"


def test_plots_are_drawn_from_the_fixture(tmp_path: Path) -> None:
    results = fixture()
    drawn = plots.draw_all(copy.deepcopy(results["benchmarks"]), tmp_path / "benchmarks")
    assert set(drawn) == set(plots.DRAW)
    for name, relative in drawn.items():
        assert relative == f"benchmarks/{name}.png"
        assert (tmp_path / relative).read_bytes().startswith(b"\x89PNG")


def test_reader_latency_is_shown_beside_the_idle_baseline() -> None:
    markdown = render(fixture(), {})
    p99 = _cells(_row(markdown, "PING p99 while the store applies"))
    assert p99[0] == "`reader_latency`"
    assert p99[2:] == ["20 ms", "1 ms (consumer idle)", "20x", "<= 50 ms", "met"]
    assert "150,000 updates/s applied meanwhile" in p99[1]
    worst = _cells(_row(markdown, "point query max while the store applies"))
    assert worst[2:4] == ["200 ms", "5 ms (consumer idle)"]
    assert worst[5:] == ["<= 250 ms", "met"]
    median = _cells(_row(markdown, "PING p50 while a delete of 1,000,000 rows"))
    assert median[2:] == ["900 ms", "0.2 ms (consumer idle)", "4,500x", "", ""]


def test_reader_latency_during_the_big_delete_misses_its_targets() -> None:
    markdown = render(fixture(), {})
    p99 = _cells(_row(markdown, "PING p99 while a delete of 1,000,000 rows"))
    assert p99[5:] == ["<= 50 ms", "**MISSED**"]
    worst = _cells(_row(markdown, "point query max while a delete"))
    assert worst[2] == "6,000 ms"
    assert worst[6] == "**MISSED**"
    assert "7 BUSY replies" in worst[1]
    delete = _cells(_row(markdown, "indexed delete of 1,000,000 rows (what blocked"))
    assert delete[2] == "2,000 ms"
    assert "1 function call, 1,950 ms inside Redis" in delete[1]


def test_reader_latency_of_a_small_delete_cannot_test_the_targets() -> None:
    results = fixture()
    results["benchmarks"]["reader_latency"]["figures"] = _reader_latency(20_000)
    markdown = render(results, {})
    small = _cells(_row(markdown, "PING max while a delete of 20,000 rows"))
    assert small[5:] == ["<= 250 ms", "n/a"]
    assert "target is for 1,000,000 rows" in small[1]
    applying = _cells(_row(markdown, "PING max while the store applies"))
    assert applying[6] == "met"


def test_reader_latency_details_list_every_phase_and_what_ran() -> None:
    markdown = render(fixture(), {})
    assert "### Concurrent readers, per phase" in markdown
    idle = _cells(_row(markdown, "| idle | PING |"))
    assert idle[2:8] == ["400", "0.2", "1", "4", "3", "0"]
    assert idle[8:] == ["nothing (baseline)", "1.50, 1.25, 1.00"]
    applying = _cells(_row(markdown, "| applying | point query |"))
    assert applying[8] == "150,000 updates/s applied; 300 function calls, 20 ms each"
    deleting = _cells(_row(markdown, "| deleting | point query |"))
    assert deleting[7] == "7"
    assert deleting[8] == "delete of 1,000,000 rows, 2,000 ms; 1 function call, 1,950 ms each"
    assert "RedisStore.apply_requests" in markdown


def test_capacity_is_the_highest_sustained_step_within_each_bound() -> None:
    markdown = render(fixture(), {})
    tight = _cells(_row(markdown, "Spark local[2]: highest load sustained at p99 <= 1,000 ms"))
    assert tight[2:] == [
        "20,000 updates/s",
        "60,000 updates/s (plain loop (baseline))",
        "0.333x",
        ">= 100,000 updates/s",
        "**MISSED**",
    ]
    loose = _cells(_row(markdown, "Spark local[2]: highest load sustained at p99 <= 2,000 ms"))
    assert loose[2:4] == ["40,000 updates/s", "60,000 updates/s (plain loop (baseline))"]
    assert loose[5:] == ["", ""]


def _spark_capacity_row(spark: dict[str, Any], p99_ms: float) -> list[str]:
    """The Spark capacity row at p99 <= 1 s, rendered from the fixture with Spark's
    capacity and ladder replaced (every step at ``p99_ms``)."""
    results = fixture()
    figures = results["benchmarks"]["capacity"]["figures"]
    figures["capacity"]["spark"] = spark
    figures["paths"]["spark"] = [
        {**step, "p99_ms": p99_ms} for step in figures["paths"]["spark"][:2]
    ]
    markdown = render(results, {})
    return _cells(_row(markdown, "Spark local[2]: highest load sustained at p99 <= 1,000 ms"))


def test_capacity_with_no_step_within_the_bound_misses_the_target() -> None:
    row = _spark_capacity_row({"1000": None, "2000": None}, 1_500.0)
    assert row[2] == "0 updates/s"
    assert row[6] == "**MISSED**"  # not n/a: the ladder found the ceiling below 100k


def test_capacity_of_a_ladder_that_never_reached_the_target_is_not_applicable() -> None:
    row = _spark_capacity_row({"1000": 40_000.0, "2000": 40_000.0}, 500.0)
    assert row[2] == "40,000 updates/s"  # every step, the highest 40k, within the bound
    assert row[6] == "n/a"


def test_capacity_cpu_compares_the_highest_step_both_sustained() -> None:
    markdown = render(fixture(), {})
    cpu = _cells(_row(markdown, "Spark local[2]: CPU seconds per million applied updates"))
    assert cpu[2:5] == ["40 CPU s", "5 CPU s (plain loop (baseline))", "8x"]
    assert "40,000 updates/s offered" in cpu[1]


def test_other_spark_variants_are_compared_with_spark_on_local() -> None:
    markdown = render(fixture(), {})
    tight = _cells(_row(markdown, "Redis Cluster: highest load sustained at p99 <= 1,000 ms"))
    assert tight[2:4] == ["0 updates/s", "20,000 updates/s (Spark local[2])"]
    assert "none sustained" in tight[1]
    assert tight[5:] == ["", ""]  # the target is Spark's on local[2]
    loose = _cells(_row(markdown, "Redis Cluster: highest load sustained at p99 <= 2,000 ms"))
    assert loose[2:5] == ["20,000 updates/s", "40,000 updates/s (Spark local[2])", "0.5x"]
    cpu = _cells(_row(markdown, "Redis Cluster: CPU seconds per million"))
    assert cpu[2:5] == ["60 CPU s", "50 CPU s (Spark local[2])", "1.2x"]


def test_capacity_details_list_every_step_with_its_cpu_by_kind() -> None:
    markdown = render(fixture(), {})
    assert "### Capacity, step by step" in markdown
    unsustained = _cells(_row(markdown, "| Spark local[2] | 1 | 60,000 |", "| ∞ |"))
    assert unsustained[5:7] == ["9,000", "∞"]
    assert unsustained[7:] == ["5", "30", "15", "-", "50"]  # no Redis CPU measured there
    on_cluster = _cells(_row(markdown, "| Spark local[2], Redis Cluster | 1 | 20,000 |"))
    assert on_cluster[7:] == ["5", "30", "15", "10", "60"]
    plain = [
        line for line in markdown.splitlines() if line.endswith("| 150 | 0.1 | 5 | 0 | 0 | - | 5 |")
    ]
    assert len(plain) == 3


def test_row_scale_compares_each_size_with_a_plain_hash_and_names_the_growth() -> None:
    markdown = render(fixture(), {})
    point = _cells(_row(markdown, "point query p50 at 1,000,000 rows"))
    assert point[2:5] == ["2.20 ms", "1.10 ms (HGET on a plain hash)", "2x"]
    assert "p99 6.60 ms" in point[1] and "flat (k = 0.02)" in point[1]
    full = _cells(_row(markdown, "full read at 1,000,000 rows"))
    assert full[2:5] == ["1,000 ms", "500 ms (HGETALL of a plain hash, decoded alike)", "2x"]
    assert "linear (k = 1.00)" in full[1]
    memory = _cells(_row(markdown, "Redis memory per row at 10,000 rows"))
    assert memory[2:5] == ["200 bytes/row", "80 bytes/row (plain hash of the same rows)", "2.5x"]
    assert "25% of it the change log; total linear (k = 0.94)" in memory[1]


def test_fleet_scale_compares_each_fleet_with_its_baseline_and_names_the_growth() -> None:
    markdown = render(fixture(), {})
    wide = _cells(_row(markdown, "apply rate, 300 replicas, one collection"))
    assert wide[2:5] == ["20,000 updates/s", "50,000 updates/s (HINCRBY per update, pipelined)",
                         "0.4x"]  # fmt: skip
    assert "time per update ~ n^0.15 in replicas" in wide[1]
    check = _cells(_row(markdown, "lease check, 300 replicas"))
    assert check[2:5] == ["50 ms", "4 ms (the check with no replica)", "12.5x"]
    assert "~ n^0.50" in check[1]
    tables = _cells(_row(markdown, "apply rate, 100 collections, three replicas"))
    assert tables[2:5] == ["36,000 updates/s", "45,000 updates/s (HINCRBY per update, "
                           "pipelined, as many hashes)", "0.8x"]  # fmt: skip
    assert "flat (k = 0.02)" in tables[1]


def test_spark_scale_compares_each_shape_with_the_usual_one() -> None:
    markdown = render(fixture(), {})
    one = _cells(_row(markdown, "Spark applied rate, 1 partition (5 collections)"))
    assert one[2:5] == ["20,000 updates/s", "40,000 updates/s (4 partitions, 5 collections)",
                        "0.5x"]  # fmt: skip
    assert "p99 5,000 ms; 100 CPU s per million; time per update falling (k = -0.50)" in one[1]
    many = _cells(_row(markdown, "Spark applied rate, 100 collections (4 partitions)"))
    assert many[2:5] == ["10,000 updates/s", "40,000 updates/s (4 partitions, 5 collections)",
                         "0.25x"]  # fmt: skip
    assert "lower bound" not in many[1] and "~ n^0.45" in many[1]
    few = _cells(_row(markdown, "Spark applied rate, 1 collection (4 partitions)"))
    assert "all kept up with: a lower bound" in few[1]


@pytest.mark.parametrize(
    ("points", "shape"),
    [
        ([(10, 5.0), (1000, 5.5)], "flat (k = 0.02)"),
        ([(10, 1.0), (100, 10.0), (1000, 95.0)], "linear (k = 0.99)"),
        ([(10, 1.0), (1000, 10.0)], "~ n^0.50"),
        ([(10, 10.0), (1000, 1.0)], "falling (k = -0.50)"),
        ([(10, 1.0)], "one size: no growth measured"),
        ([(10, 0.0), (100, 1.0)], "one size: no growth measured"),
    ],
)
def test_growth_is_named_from_the_curve(points: list[tuple[float, float]], shape: str) -> None:
    assert growth(points) == shape


def test_notes_written_by_hand_end_the_page() -> None:
    markdown = render(fixture(), {}, "Spark 4.2.0 replaced 4.0.0.\n")
    assert markdown.endswith("## Notes (bench/notes.md)\n\nSpark 4.2.0 replaced 4.0.0.\n")
    assert "## Notes" not in render(fixture(), {})


def test_bench_run_is_a_subcommand() -> None:
    from collection_manager.cli.main import build_parser

    args = build_parser().parse_args(["bench", "run", "--quick", "--out", "/tmp/x"])
    assert callable(args.run)
    assert args.quick
    assert args.out == Path("/tmp/x")


def _breakdown_run(trigger_ms: int, p50: float, p99: float, batch_ms: float) -> dict[str, Any]:
    return {
        "trigger_ms": trigger_ms, "batches": 12, "p50_ms": p50, "p99_ms": p99,
        "spark_ms": {"latestOffset": 3.0, "addBatch": batch_ms - 20, "triggerExecution": batch_ms},
        "steps_ms": {"collect": batch_ms - 60, "apply": 41.5},
        "cpu_s_per_million": 140.0, "idle_cpu": {"Spark JVM": 50 / trigger_ms, "all": 0.1},
    }  # fmt: skip


def test_the_batch_breakdown_compares_spark_with_the_baseline_and_lists_every_step() -> None:
    from bench.breakdown_figures import batch_breakdown, breakdown_details

    result = {
        "status": "ok",
        "figures": {
            "rate": 10_000,
            "plain": {"p50_ms": 100.0, "p99_ms": 150.0, "cpu_s_per_million": 44.0,
                      "idle_cpu": {"all": 0.02}},
            "spark": [
                _breakdown_run(500, 550.0, 900.0, 400.0),
                _breakdown_run(100, 180.0, 290.0, 120.0),
            ],
        },
    }  # fmt: skip
    result["figures"]["spark"][1]["idle_cpu"]["all"] = 0.4
    figures = batch_breakdown(result)
    idle = [(f.name, f.value, f.baseline) for f in figures if f.name.startswith("Spark idle")]
    assert idle == [
        ("Spark idle: CPU seconds per second (every process), 500 ms trigger", 0.1, 0.02),
        ("Spark idle: CPU seconds per second (every process), 100 ms trigger", 0.4, 0.02),
    ]
    ratios = {
        f.name.replace("publish-to-visible / baseline's, 10,000 updates/s, ", ""): f.value
        for f in figures
        if f.name.startswith("Spark p")
    }
    assert ratios == {
        "Spark p50 500 ms trigger": 5.5,
        "Spark p99 500 ms trigger": 6.0,
        "Spark p50 100 ms trigger": 1.8,
        "Spark p99 100 ms trigger": 290 / 150,
    }
    # One run each: the target is judged on capacity's medians of several climbs.
    assert all(f.target is None for f in figures)
    table = "\n".join(breakdown_details(result))
    assert "| Spark: triggerExecution | 400.0 | 120.0 |" in table
    assert "| step: apply | 41.5 | 41.5 |" in table
    assert "| publish-to-visible p99 | 900 | 290 |" in table
    assert "p50 100 ms and p99 150 ms, idle 0.020 CPU s per s" in table
    assert "| idle: CPU s per s, every process | 0.100 | 0.400 |" in table


def _climbing(p50s: list[float], p99s: list[float], capacities: list[float]) -> list[Any]:
    """One path's climbs: each a 10k step (its p50 and p99) and a step at its capacity
    (within 1 s), then one past it (p99 1.5 s)."""
    steps = []
    for climb_number, (p50, p99, top) in enumerate(zip(p50s, p99s, capacities, strict=True)):
        climb = [_step(10_000.0, p99, 0.1, {"Spark JVM": p50}), _step(top, 900.0, 0.2, {})]
        climb += [_step(top + 20_000.0, 1_500.0, 0.3, {})]
        for step in climb:
            p50_ms = p50 if step is climb[0] else 300.0
            steps.append({**step, "p50_ms": p50_ms, "climb": climb_number})
    return steps


def test_the_ratios_to_the_baseline_are_medians_of_climbs_taken_in_turns() -> None:
    results = fixture()
    figures = results["benchmarks"]["capacity"]["figures"]
    # Spark's middle climb is 4x the loop's at 10k; one noisy climb (10x) decides nothing.
    figures["paths"]["spark"] = _climbing([400, 1_000, 250], [600, 2_000, 500], [60e3, 80e3, 40e3])
    figures["paths"]["plain"] = _climbing([100, 100, 100], [150, 150, 200], [80e3, 80e3, 100e3])
    figures["capacity"] |= {
        name: {"1000": median_capacity(figures["paths"][name], 1_000), "2000": None}
        for name in ("spark", "plain")
    }
    assert figures["capacity"]["spark"]["1000"] == 60_000.0  # the median climb's
    markdown = render(results, {})
    p50 = _cells(_row(markdown, "Spark p50 publish-to-visible / the plain loop's"))
    assert p50[1].startswith("Spark p50 publish-to-visible / the plain loop's, at 10,000 updates/s")
    assert "400 ms against 100 ms (medians of 3 climbs" in p50[1]
    assert p50[2] == "4" and p50[5:] == ["<= 2 x the baseline", "**MISSED**"]
    p99 = _cells(_row(markdown, "Spark p99 publish-to-visible / the plain loop's"))
    assert p99[2] == "4"  # the ratios 4, 13.3 and 2.5: their median, not a ratio of medians
    capacity = _cells(_row(markdown, "Spark's capacity at p99 <= 1,000 ms / the plain loop's"))
    assert capacity[2] == "0.75"  # 60k against 80k, each the median of its climbs
    assert capacity[5:] == [">= 0.9 x the baseline", "**MISSED**"]
    cpu = _cells(_row(markdown, "Spark: CPU seconds per million", "at 10,000 updates/s"))
    assert cpu[2:4] == ["400 CPU s", "100 CPU s (plain consumer loop)"]
    assert cpu[5:] == ["<= 84 CPU s", "**MISSED**"]
    tight = _cells(_row(markdown, "Spark local[2]: highest load sustained at p99 <= 1,000 ms"))
    assert tight[2] == "60,000 updates/s" and "the median of 3 climbs" in tight[1]


def test_a_ladder_that_starts_elsewhere_cannot_test_the_ratio_at_ten_thousand() -> None:
    results = fixture()
    markdown = render(results, {})  # the fixture's ladder starts at 20k
    p50 = _cells(_row(markdown, "Spark p50 publish-to-visible / the plain loop's"))
    assert p50[6] == "n/a" and "(one climb;" in p50[1]


@pytest.mark.parametrize(("big_rows", "verdict"), [(10_000_000, "met"), (1_000_000, "n/a")])
def test_reader_latency_during_a_full_read_and_a_drop_is_judged_at_ten_million_rows(
    big_rows: int, verdict: str
) -> None:
    results = fixture()
    phases = results["benchmarks"]["reader_latency"]["figures"]["phases"]
    quiet = {"PING": _probes(0.3, 6.0, 9.0), "point query": _probes(0.3, 7.0, 12.0)}
    phases["reading"] = {
        **quiet, "probed_s": 30.0, "rows_read": big_rows, "read_ms": 30e3, "fill_s": 75.0,
        "function_calls": 0, "function_ms": 0.0,
    }  # fmt: skip
    phases["dropping"] = {
        **quiet, "probed_s": 60.0, "rows_dropped": big_rows, "drop_ms": 60e3, "fill_s": 0.0,
        "function_calls": big_rows // 500, "function_ms": 45e3,
    }  # fmt: skip
    markdown = render(results, {})
    read = _cells(_row(markdown, f"PING p99 while a stepped full read of {big_rows:,} rows"))
    drop = _cells(_row(markdown, f"point query max while a collection of {big_rows:,} rows"))
    assert read[2:4] == ["6 ms", "1 ms (consumer idle)"]
    assert read[6] == verdict and drop[6] == verdict
    assert ("target is for 10,000,000 rows" in read[1]) == (verdict == "n/a")
    dropped = _cells(_row(markdown, "| dropping | PING |"))[8]
    assert dropped.startswith(f"drop of {big_rows:,} rows, 60,000 ms; {big_rows // 500:,} function")


def test_the_page_opens_with_the_generated_page_mark() -> None:
    first = render(fixture(), {}).splitlines()[0]

    assert first == f"<!-- {GENERATED_MARK} -->"
    assert is_generated_page(render(fixture(), {}))
