"""From one run's results to ``docs/benchmarks.md``: pure, so the rendering is unit-tested.

``render(results, plots)`` takes what ``bench.all`` collected (machine, per-benchmark
scale, status, wall time and figures) and the plot files that were drawn, and returns the
markdown. Every number in it comes from ``results``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from bench.breakdown_figures import breakdown_details
from bench.bucket_figures import buckets_details
from bench.figures import CAPACITY_LABELS, Figure, cpu_kinds, figures_of

# Plot key (a benchmark's name) -> caption; bench.plots draws ``<key>.png``.
PLOTS = {
    "e2e": "End to end: applied throughput and publish-to-visible latency (p50, p99), "
    "Spark vs the plain-loop baseline",
    "store_apply": "Store apply throughput vs the pipelined and naive HINCRBY baselines",
    "store_delete": "Delete time vs collection size, index vs scan (log axes)",
    "ttl_index": "TTL index size vs primary size over simulated time, ours (one-to-one, "
    "one-to-many) vs an append-only index",
    "expiration": "Stored future retractions with and without an expiration offset",
    "cancel_to_quiet": "Cancel-to-quiet time of every run vs the full-snapshot time",
    "capacity": "Capacity: p99 publish-to-visible latency against offered load (log axis), "
    "and CPU seconds per million updates by process kind at the lowest step, Spark vs the "
    "plain-loop baseline",
    "row_scale": "Point query, full read and Redis memory per row at growing collection "
    "sizes, each against a plain Redis hash of the same rows (log axes)",
    "fleet_scale": "Apply rate against replicas and collections, and the lease check "
    "against replicas, each beside its baseline (pipelined HINCRBY; the check with no replica)",
    "spark_scale": "The Spark consumer's applied rate against the topic's partitions and "
    "the number of collections, offered more than it applies, beside the usual shape",
    "reader_latency": "A separate reader's PING and point-query latency (p50, p99, max) with "
    "the consumer idle, applying at full speed, and during a large delete (log axis)",
}


def number(value: float | None, unit: str = "") -> str:
    """``value`` for a table cell: thousands separators, about three significant digits."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if math.isinf(value):
        return "∞"
    magnitude = abs(value)
    if magnitude >= 100 or (magnitude == int(magnitude) and magnitude >= 1):
        text = f"{value:,.0f}"
    elif magnitude >= 1:
        text = f"{value:.2f}"
    else:
        text = f"{value:.3g}"
    return f"{text} {unit}".strip()


def ratio(value: float | None) -> str:
    """A ratio cell, e.g. ``1.06x``."""
    if value is None or math.isnan(value):
        return "-"
    return f"{value:,.0f}x" if value >= 100 else f"{value:.3g}x"


def _table(columns: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
    return lines


def _figure_row(figure: Figure) -> list[str]:
    baseline = ""
    if figure.baseline is not None:
        baseline = f"{number(figure.baseline, figure.unit)} ({figure.baseline_name})"
    name = figure.name + (f" ({figure.note})" if figure.note else "")
    target = figure.target.text() if figure.target else ""
    verdict = {"met": "met", "MISSED": "**MISSED**"}.get(figure.verdict, figure.verdict)
    return [
        f"`{figure.benchmark}`",
        name,
        number(figure.value, figure.unit),
        baseline,
        ratio(figure.ratio),
        target,
        verdict,
    ]


def results_table(figures: Sequence[Figure]) -> list[str]:
    """The table of every figure, its baseline, ratio, target and verdict."""
    columns = ["benchmark", "figure", "value", "baseline (same run)", "ratio", "target", "met"]
    return _table(columns, (_figure_row(f) for f in figures))


def machine_table(machine: Mapping[str, Any], load_after: Sequence[float] | None) -> list[str]:
    """Hardware, OS and versions the run used."""
    git = machine.get("git", {})
    dirty = " plus uncommitted changes" if git.get("dirty") else ""
    commit = git.get("commit", "unknown") + dirty
    memory = machine.get("memory_gib")
    rows = [
        ("date (UTC)", machine.get("date")),
        ("git commit", commit),
        ("CPU", machine.get("cpu_model")),
        ("cores", machine.get("cores")),
        ("memory", None if memory is None else f"{memory:.1f} GiB"),
        ("OS", machine.get("os")),
        ("Python", machine.get("python")),
        ("Java", machine.get("java")),
        ("Redis", machine.get("redis")),
        ("Kafka", machine.get("kafka")),
        ("Spark (pyspark)", machine.get("spark")),
        ("load average at start (1, 5, 15 min)", _load(machine.get("load_average"))),
        ("load average at end", _load(load_after)),
    ]
    return _table(["", ""], ((key, str(value)) for key, value in rows if value is not None))


def _load(load: Sequence[float] | None) -> str | None:
    return None if load is None else ", ".join(f"{x:.2f}" for x in load)


def command(name: str, scale: Mapping[str, Any]) -> str:
    """The command line that reruns ``name`` at ``scale``."""
    options = [
        f"--{key.replace('_', '-')} {value}" for key, value in scale.items() if value is not None
    ]
    return " ".join([f"python -m bench.{name}", *options])


def scale_table(benchmarks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Per benchmark: its status, wall time and the command line of its scale."""
    rows = [
        (
            f"`{name}`",
            result.get("status", "?"),
            number(result.get("wall_s"), "s"),
            f"`{command(name, result.get('scale') or {})}`",
        )
        for name, result in benchmarks.items()
    ]
    return _table(["benchmark", "status", "wall time", "scale (rerun with)"], rows)


def e2e_details(result: Mapping[str, Any]) -> list[str]:
    """Both end-to-end paths side by side, with lag, drain and busy share."""
    paths = result["figures"]["paths"]
    rows = []
    for label, key in (("Spark", "spark"), ("plain loop (baseline)", "plain")):
        p = paths[key]
        rows.append(
            [
                label,
                number(p["offered"]),
                number(p["applied"]),
                number(p["p50_ms"]),
                number(p["p99_ms"]),
                number(p["max_ms"]),
                number(p["lag"]),
                number(p["drain_s"]),
                number(p["busy"] * 100),
                f"{p['probes']} ({p['unseen_probes']} unseen)",
            ]
        )
    columns = [
        "consumer",
        "offered/s",
        "applied/s",
        "p50 ms",
        "p99 ms",
        "max ms",
        "lag (requests)",
        "drain s",
        "busy %",
        "probes",
    ]
    return _table(columns, rows)


def _meanwhile(phase: str, figures: Mapping[str, Any]) -> str:
    """What ran during a phase of ``reader_latency``."""
    if phase == "idle":
        return "nothing (baseline)"
    calls, ms = figures["function_calls"], figures["function_ms"]
    plural = "" if calls == 1 else "s"
    inside = f"{calls:,} function call{plural}, {number(ms / calls if calls else None)} ms each"
    if phase == "applying":
        return f"{number(figures['applied_updates_per_s'])} updates/s applied; {inside}"
    if phase == "reading":
        return f"full read of {figures['rows_read']:,} rows, {number(figures['read_ms'])} ms"
    if phase == "expiring":
        what = f"{figures['rows_expired']:,} rows expired, {number(figures['expire_ms'])} ms"
        return f"{what}; {inside}"
    if phase == "dropping":
        return (
            f"drop of {figures['rows_dropped']:,} rows, {number(figures['drop_ms'])} ms; {inside}"
        )
    return (
        f"delete of {figures['rows_deleted']:,} rows, {number(figures['delete_ms'])} ms; {inside}"
    )


def _reader_cells(summary: Mapping[str, Any]) -> list[str]:
    keys = ("probes", "p50_ms", "p99_ms", "max_ms", "max_round_trip_ms", "busy_replies")
    return [number(summary[key]) for key in keys]


def reader_details(result: Mapping[str, Any]) -> list[str]:
    """Every phase and probed command of ``reader_latency``, with what ran meanwhile."""
    figures = result["figures"]
    lines = [
        f"Two clients, each on its own connection, send `PING` and a point query (`HGET` of "
        f"one row of a collection's contents hash) every {figures['interval_ms']:g} ms. "
        "Latency counts from when a probe was due, so a probe waiting behind a blocked one "
        "counts its wait; a `BUSY` reply is no answer (the probe is sent again). While "
        "*applying*, another process calls `RedisStore.apply_requests` back to back: the "
        "Redis work of the Spark consumer, without Kafka and Spark, so the phase is short "
        "and deterministic. The rows read, deleted and dropped are loaded before, unprobed.",
        "",
    ]
    phases = figures["phases"]
    rows = [
        [
            phase,
            command,
            *_reader_cells(phases[phase][command]),
            _meanwhile(phase, phases[phase]),
            _load(phases[phase].get("load_average")) or "",
        ]
        for phase in phases
        for command in figures["commands"]
    ]
    columns = ["phase", "command", "probes", "p50 ms", "p99 ms", "max ms"]
    columns += ["worst round trip ms", "BUSY replies", "meanwhile", "load average after"]
    return lines + _table(columns, rows)


def row_ttl_details(result: Mapping[str, Any]) -> list[str]:
    """Both retraction paths of ``row_ttl`` per size, with the Redis time of their calls."""
    figures = result["figures"]
    lines = [
        "Every row of a collection retracted at once: by their TTL, in one `cm_due` call "
        "(Redis serves nobody else during it), or by a `Delete` on `replica_id`, in steps "
        f"of {figures['delete_step_rows']:,} rows. Redis time is its own count of `FCALL` "
        "time (Redis-wide).",
        "",
    ]
    rows = [
        [
            number(size["rows"]),
            label,
            number(size[path]["wall_ms"]),
            number(size[path]["rows_per_s"]),
            number(size[path]["function_calls"]),
            number(size[path]["function_ms"]),
            number(size[path]["ms_per_call"]),
        ]
        for size in figures["sizes"]
        for path, label in (("expiry", "expiry (one cm_due)"), ("delete", "Delete (baseline)"))
    ]
    columns = ["rows", "path", "wall ms", "rows/s", "FCALLs", "Redis ms", "Redis ms per call"]
    return lines + _table(columns, rows)


def _failures(benchmarks: Mapping[str, Mapping[str, Any]]) -> list[str]:
    lines = []
    for name, result in benchmarks.items():
        if result.get("status") != "ok":
            lines += [f"### `{name}`: {result.get('status')}", "", "```"]
            lines += [str(result.get("error", "")).rstrip(), "```", ""]
    return lines


def _plots(plots: Mapping[str, str]) -> list[str]:
    lines = []
    for key, caption in PLOTS.items():
        if key in plots:
            lines += [f"### {caption}", "", f"![{caption}]({plots[key]})", ""]
    return lines


def _intro(results: Mapping[str, Any]) -> list[str]:
    total = number(results.get("total_s"), "s")
    lines = [
        "# Benchmarks",
        "",
        f"Generated by `collection-manager bench run{' --quick' if results.get('quick') else ''}`"
        f" in {total} of wall time. Every figure below was measured in that one run, each "
        "baseline beside the figure it is compared to; the ratio is value / baseline (for "
        "times and sizes, lower is better). The target column states each requirement "
        "(`bench/targets.py`); targets are reported, not asserted; **n/a** means the run's "
        "scale cannot test the target.",
        "",
    ]
    if results.get("quick"):
        lines += [
            "> **Quick run** (`--quick`): smoke-test scale. The figures show the machinery "
            "works, not what the system can do.",
            "",
        ]
    return lines


def capacity_details(result: Mapping[str, Any]) -> list[str]:
    """Every step of both paths, and where each step's CPU went per million updates."""
    paths = result["figures"]["paths"]
    labels = {**CAPACITY_LABELS, **result["figures"].get("labels", {})}
    kinds = cpu_kinds(paths)
    rows = [
        [
            labels[name],
            str(s.get("climb", 0) + 1),
            number(s["offered"]),
            number(s["applied"]),
            number(s["p50_ms"]),
            number(s["p99_ms"]),
            number(s["drain_s"]),
            *(number(s["cpu_s_per_million"].get(kind)) for kind in [*kinds, "all"]),
        ]
        for name, steps in paths.items()
        for s in steps
    ]
    columns = ["consumer", "climb", "offered/s", "applied/s", "p50 ms", "p99 ms", "drain s"]
    return _table([*columns, *kinds, "all (CPU s per million updates)"], rows)


def render(results: Mapping[str, Any], plots: Mapping[str, str], notes: str = "") -> str:
    """The markdown report of ``results`` linking the ``plots`` (key -> relative path),
    ending with ``notes`` (markdown written by hand: what changed between runs, and why)."""
    benchmarks = results.get("benchmarks", {})
    lines = _intro(results)
    lines += ["## Machine", "", *machine_table(results.get("machine", {}), results.get("load_end"))]
    lines += [
        "",
        "The machine may have been shared with other work during the run: timings are noisy.",
        "",
    ]
    lines += ["## Results", "", *results_table(figures_of(benchmarks)), ""]
    if benchmarks.get("e2e", {}).get("status") == "ok":
        lines += ["### End to end, both paths", "", *e2e_details(benchmarks["e2e"]), ""]
    if benchmarks.get("capacity", {}).get("status") == "ok":
        details = capacity_details(benchmarks["capacity"])
        lines += [
            "### Capacity, step by step",
            "",
            "Each step offers the end-to-end load at one rate; CPU seconds per million "
            "applied updates by process kind (`bench/cpu.py`), from the load's first send "
            "until it was all applied.",
            "",
            *details,
            "",
        ]
    if benchmarks.get("batch_breakdown", {}).get("status") == "ok":
        details = breakdown_details(benchmarks["batch_breakdown"])
        lines += ["### One micro-batch, step by step", "", *details, ""]
    if benchmarks.get("buckets", {}).get("status") == "ok":
        details = buckets_details(benchmarks["buckets"])
        lines += ["### Buckets on a Redis Cluster, per bucket count", "", *details, ""]
    if benchmarks.get("reader_latency", {}).get("status") == "ok":
        details = reader_details(benchmarks["reader_latency"])
        lines += ["### Concurrent readers, per phase", "", *details, ""]
    if benchmarks.get("row_ttl", {}).get("status") == "ok":
        details = row_ttl_details(benchmarks["row_ttl"])
        lines += ["### Row TTL, retraction paths per size", "", *details, ""]
    lines += ["## Plots", "", *_plots(plots)]
    lines += ["## Scale and wall time", "", *scale_table(benchmarks), ""]
    failures = _failures(benchmarks)
    if failures:
        lines += ["## Failures", "", *failures]
    if notes.strip():
        lines += ["## Notes (bench/notes.md)", "", notes.strip(), ""]
    return "\n".join(lines).rstrip() + "\n"
