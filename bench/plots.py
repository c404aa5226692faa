"""The report's plots (matplotlib, Agg backend): one PNG per benchmark, from one run's results.

``draw_all(benchmarks, directory)`` draws what it can and returns, per benchmark name, the
file it wrote; a benchmark that failed, or whose plot fails, is left out of the report's
plots rather than failing the report.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")

from matplotlib.axes import Axes
from matplotlib.figure import Figure as Canvas

from bench import targets
from bench.climbs import climbs
from bench.figures import CAPACITY_LABELS, cpu_kinds
from bench.model_figures import model_rows
from bench.scale_figures import fleet_scale_growth, row_scale_growth, spark_scale_growth

logger = logging.getLogger(__name__)

Result = Mapping[str, Any]
OURS, BASE, TARGET = "tab:blue", "tab:gray", "tab:red"


def _target_line(axes: Axes, y: float, label: str, horizontal: bool = True) -> None:
    if horizontal:
        axes.axhline(y, color=TARGET, linestyle="--", linewidth=1, label=label)


def _bar_labels(axes: Axes, bars: Any, fmt: str = "{:,.0f}") -> None:
    axes.bar_label(bars, labels=[fmt.format(b.get_height()) for b in bars], fontsize=8)


def _legend_above_bars(axes: Axes) -> None:
    # Room above the tallest bar (or target line) so the legend covers no bar.
    axes.set_ylim(top=axes.get_ylim()[1] * 1.3)
    axes.legend(fontsize=8, loc="upper center", ncols=3)


def e2e(result: Result, canvas: Canvas) -> None:
    """Applied vs offered rate, p50/p99 latency, and the latency CDF of both paths."""
    paths = result["figures"]["paths"]
    names = {"spark": "Spark", "plain": "plain loop (baseline)"}
    rate, latency, cdf = canvas.subplots(1, 3)
    x = range(len(names))
    offered = [paths[k]["offered"] for k in names]
    applied = [paths[k]["applied"] for k in names]
    rate.bar([i - 0.2 for i in x], offered, 0.4, color=BASE, label="offered")
    _bar_labels(rate, rate.bar([i + 0.2 for i in x], applied, 0.4, color=OURS, label="applied"))
    _target_line(rate, targets.E2E_RATE.bound, f"target {targets.E2E_RATE.text()}")
    rate.set_xticks(list(x), list(names.values()))
    rate.set_ylabel("updates/s")
    rate.set_title("throughput")
    _legend_above_bars(rate)
    for shift, key, color in ((-0.2, "p50_ms", "tab:cyan"), (0.2, "p99_ms", OURS)):
        values = [paths[k][key] for k in names]
        bars = latency.bar([i + shift for i in x], values, 0.4, color=color, label=key[:3])
        _bar_labels(latency, bars)
    _target_line(latency, targets.E2E_P99_MS.bound, f"p99 target {targets.E2E_P99_MS.text()}")
    latency.set_xticks(list(x), list(names.values()))
    latency.set_ylabel("publish to visible, ms")
    latency.set_title(f"latency ({result['scale']['trigger_ms']} ms trigger)")
    _legend_above_bars(latency)
    for key, label in names.items():
        values = paths[key]["latencies_ms"]
        if values:
            share = [(i + 1) / len(values) for i in range(len(values))]
            cdf.plot(values, share, color=OURS if key == "spark" else BASE, label=label)
    cdf.set_xlabel("publish to visible, ms")
    cdf.set_ylabel("share of probes")
    cdf.set_title("latency distribution")
    cdf.legend(fontsize=8)


def capacity(result: Result, canvas: Canvas) -> None:
    """p99 latency against offered load for both paths, and CPU per million updates by kind."""
    paths = result["figures"]["paths"]
    names = {**CAPACITY_LABELS, **result["figures"].get("labels", {})}
    colors = {
        "spark": OURS,
        "plain": BASE,
        "redis_cluster": "tab:purple",
        "standalone": "tab:olive",
    }
    latency, cpu = canvas.subplots(1, 2)
    for name, steps in paths.items():
        for number, climb in enumerate(climbs(steps)):  # one line per climb, one label
            latency.plot(
                [s["offered"] for s in climb],
                [s["p99_ms"] for s in climb],
                marker="o",
                color=colors.get(name),
                label=names[name] if number == 0 else None,
            )
    _target_line(latency, targets.CAPACITY_P99_MS, f"p99 {targets.CAPACITY_P99_MS:,} ms")
    latency.set_yscale("log")
    latency.set_xlabel("offered updates/s")
    latency.set_ylabel("p99 publish-to-visible (ms)")
    latency.legend(fontsize=8)
    kinds = cpu_kinds(paths)
    bottoms = dict.fromkeys(paths, 0.0)
    for kind in kinds:
        heights = [paths[name][0]["cpu_s_per_million"].get(kind, 0.0) for name in paths]
        cpu.bar(
            [names[name] for name in paths],
            heights,
            bottom=[bottoms[name] for name in paths],
            label=kind,
        )
        for name, height in zip(paths, heights, strict=True):
            bottoms[name] += height
    cpu.set_ylabel("CPU s per million updates (lowest step)")
    cpu.set_ylim(top=max(bottoms.values(), default=1.0) * 1.6)  # room for the legend
    cpu.tick_params(axis="x", labelsize=7, labelrotation=15)
    cpu.legend(fontsize=6, loc="upper left", ncols=2)


def store_apply(result: Result, canvas: Canvas) -> None:
    """The store's apply rate against both HINCRBY baselines."""
    figures = result["figures"]
    axes = canvas.subplots()
    labels = ["store (atomic script)", "HINCRBY pipelined", "HINCRBY naive"]
    keys = ["store_updates_per_s", "pipelined_updates_per_s", "naive_updates_per_s"]
    bars = axes.bar(labels, [figures[k] for k in keys], color=[OURS, BASE, BASE])
    _bar_labels(axes, bars)
    _target_line(axes, targets.STORE_APPLY_RATE.bound, f"target {targets.STORE_APPLY_RATE.text()}")
    axes.set_ylabel("updates/s")
    _legend_above_bars(axes)


def store_delete(result: Result, canvas: Canvas) -> None:
    """Delete time against collection size, indexed and scanned, on log axes."""
    sizes = result["figures"]["sizes"]
    axes = canvas.subplots()
    axes.loglog(
        [s["rows"] for s in sizes],
        [s["indexed_ms"] for s in sizes],
        "o-",
        color=OURS,
        label="indexed (replica_id)",
    )
    scanned = [s for s in sizes if s["scan_ms"] is not None]
    axes.loglog(
        [s["rows"] for s in scanned],
        [s["scan_ms"] for s in scanned],
        "s-",
        color=BASE,
        label="scan (baseline)",
    )
    axes.plot(
        [targets.INDEXED_DELETE_AT_ROWS],
        [targets.INDEXED_DELETE_MS.bound],
        "x",
        color=TARGET,
        markersize=10,
        label=f"target: {targets.INDEXED_DELETE_MS.text()} at "
        f"{targets.INDEXED_DELETE_AT_ROWS:,} rows",
    )
    axes.set_xlabel("collection rows")
    axes.set_ylabel(f"delete of {result['figures']['rows_deleted']:,} rows, ms (median)")
    axes.legend(fontsize=8)


def ttl_index(result: Result, canvas: Canvas) -> None:
    """Primary and index sizes per simulated second, one-to-one and one-to-many."""
    samples = result["figures"]["samples"]
    t = [s["t_s"] for s in samples]
    one, many = canvas.subplots(1, 2)
    for axes, kind, title in (
        (one, "one_to_one", "one-to-one (leases)"),
        (many, "one_to_many", "one-to-many (rows)"),
    ):
        axes.plot(
            t,
            [s[kind]["primary"] for s in samples],
            color="black",
            linewidth=2.5,
            label="primary (keys)",
        )
        axes.plot(
            t,
            [s[kind]["index"] for s in samples],
            color=OURS,
            linestyle="--",
            label="index, ours (tight)",
        )
        axes.plot(
            t,
            [s[f"{kind}_baseline"]["index"] for s in samples],
            color=BASE,
            label="index, append-only",
        )
        axes.set_title(title)
        axes.set_xlabel("simulated time, s")
        axes.set_ylabel("entries")
    many.plot(
        t,
        [s["one_to_many"]["elements"] for s in samples],
        color="tab:green",
        linestyle=":",
        label="elements (rows)",
    )
    one.legend(fontsize=8)
    many.legend(fontsize=8)


def expiration(result: Result, canvas: Canvas) -> None:
    """Scheduled retractions per validity, without and with an expiration offset."""
    cases = result["figures"]["cases"]
    axes = canvas.subplots()
    validities = sorted({c["validity_days"] for c in cases})
    for i, validity in enumerate(validities):
        mine = sorted(
            (c for c in cases if c["validity_days"] == validity),
            key=lambda c: c["offset_days"] is not None,
        )
        width = 0.8 / len(mine)
        for j, case in enumerate(mine):
            offset = case["offset_days"]
            label = "no offset (baseline)" if offset is None else f"offset {offset} d"
            bars = axes.bar(
                i - 0.4 + width * (j + 0.5),
                case["scheduled"],
                width * 0.9,
                color=BASE if offset is None else OURS,
            )
            axes.bar_label(bars, labels=[f"{case['scheduled']:,}\n{label}"], fontsize=8)
    axes.set_xticks(range(len(validities)), [f"rows valid {v} d" for v in validities])
    axes.set_ylabel("stored future retractions")
    axes.margins(y=0.2)


def cancel_to_quiet(result: Result, canvas: Canvas) -> None:
    """Every run's cancel-to-quiet time, per scenario, against the full-snapshot time."""
    runs = result["figures"]["runs"]
    scenarios = list(dict.fromkeys(run["scenario"] for run in runs))
    axes = canvas.subplots()
    for i, scenario in enumerate(scenarios):
        mine = [run for run in runs if run["scenario"] == scenario]
        xs = [i + (k - (len(mine) - 1) / 2) * 0.05 for k in range(len(mine))]
        axes.plot(
            xs,
            [run["quiet_ms"] for run in mine],
            "o",
            color=OURS,
            label="cancel to quiet (each run)" if i == 0 else None,
        )
        if mine[0]["baseline_s"] is not None:
            axes.plot(
                [i],
                [mine[0]["baseline_s"] * 1000],
                "^",
                color=BASE,
                markersize=9,
                label="whole snapshot, emitted and flushed" if i == 0 else None,
            )
        floors = [run["report_floor_ms"] for run in mine if run.get("report_floor_ms")]
        if floors:
            axes.plot(
                xs[: len(floors)],
                floors,
                "v",
                color=BASE,
                label="bare confluent-kafka: purge, serve the reports (each run)",
            )
    _target_line(axes, targets.CANCEL_QUIET_MS.bound, f"target {targets.CANCEL_QUIET_MS.text()}")
    axes.set_yscale("log")
    axes.set_xticks(range(len(scenarios)), scenarios)
    axes.set_ylabel("ms (log)")
    axes.set_title(f"{result['figures']['snapshot_rows']:,}-row snapshot")
    axes.legend(fontsize=8)


def _ms(value: float) -> str:
    return f"{value:,.0f}" if value >= 100 else f"{value:.2g}"


def reader_latency(result: Result, canvas: Canvas) -> None:
    """p50, p99 and max of each probed command per phase, idle first, on a log axis."""
    figures = result["figures"]
    phases = figures["phases"]
    labels = [
        "idle\n(baseline)",
        f"applying\n{phases['applying']['applied_updates_per_s']:,.0f} updates/s",
        f"deleting\n{phases['deleting']['rows_deleted']:,} rows",
    ]
    stats = (("p50_ms", "p50", "tab:cyan"), ("p99_ms", "p99", OURS), ("max_ms", "max", "navy"))
    commands = figures["commands"]
    for axes, command in zip(canvas.subplots(1, len(commands)), commands, strict=True):
        for shift, (key, label, color) in zip((-0.27, 0, 0.27), stats, strict=True):
            values = [phases[phase][command][key] for phase in ("idle", "applying", "deleting")]
            bars = axes.bar([i + shift for i in range(3)], values, 0.27, color=color, label=label)
            axes.bar_label(bars, labels=[_ms(v) for v in values], fontsize=8)
        for target, name, style in (
            (targets.READER_P99_MS, "p99", "--"),
            (targets.READER_MAX_MS, "max", ":"),
        ):
            label = f"{name} target {target.text()}"
            axes.axhline(target.bound, color=TARGET, linestyle=style, linewidth=1, label=label)
        axes.set_yscale("log")
        axes.set_xticks(range(3), labels)
        axes.set_ylabel("latency from when the probe was due, ms (log)")
        axes.set_title(f"{command}, every {figures['interval_ms']:g} ms")
        axes.set_ylim(top=axes.get_ylim()[1] * 10)  # room for the legend above the bars
        axes.legend(fontsize=8, loc="upper left", ncols=3)


def _ticks_at(axes: Axes, values: list[int]) -> None:
    """x ticks at the measured points only, in plain numbers (not 3x10^0 on a log axis)."""
    axes.set_xticks(values, [f"{v:,}" for v in values])
    axes.minorticks_off()


def row_scale(result: Result, canvas: Canvas) -> None:
    """Point query, full read and memory against collection size, each beside its plain
    hash baseline, on log axes; the legend gives the growth each curve shows."""
    sizes = result["figures"]["sizes"]
    rows = [s["rows"] for s in sizes]
    shapes = row_scale_growth(sizes)
    panels = (
        ("point query, ms", f"p50, index + filter: {shapes['point']}",
         [s["point"]["ours"]["p50_ms"] for s in sizes],
         "HGET p50 (baseline)", [s["point"]["plain"]["p50_ms"] for s in sizes]),
        ("full read, ms (median)", f"snapshot: {shapes['full']}",
         [s["full"]["ours_ms"] for s in sizes],
         "HGETALL (baseline)", [s["full"]["plain_ms"] for s in sizes]),
        ("Redis memory, bytes per row", f"collection (total {shapes['memory']})",
         [s["bytes_per_row"] for s in sizes],
         "plain hash (baseline)", [s["plain_bytes_per_row"] for s in sizes]),
    )  # fmt: skip
    for axes, (ylabel, ours, mine, base, theirs) in zip(canvas.subplots(1, 3), panels, strict=True):
        axes.loglog(rows, mine, "o-", color=OURS, label=ours)
        axes.loglog(rows, theirs, "s-", color=BASE, label=base)
        axes.set_xlabel("collection rows")
        axes.set_ylabel(ylabel)
        axes.legend(fontsize=8)
        _ticks_at(axes, rows)


def _rate_panel(axes: Axes, points: list[Result], axis: str, ours: str, xlabel: str) -> None:
    """The store's apply rate and pipelined HINCRBY's against ``axis`` (log x)."""
    counts = [p[axis] for p in points]
    axes.semilogx(counts, [p["updates_per_s"] for p in points], "o-", color=OURS, label=ours)
    axes.semilogx(
        counts,
        [p["baseline_updates_per_s"] for p in points],
        "s-",
        color=BASE,
        label="HINCRBY pipelined (baseline)",
    )
    axes.set_xlabel(xlabel)
    axes.set_ylabel("applied updates/s")
    axes.set_ylim(bottom=0)
    axes.legend(fontsize=8)
    _ticks_at(axes, counts)


def fleet_scale(result: Result, canvas: Canvas) -> None:
    """Apply rate against replicas and collections, and the lease check against replicas,
    each beside its baseline; the legend gives the growth each curve shows."""
    figures = result["figures"]
    shapes = fleet_scale_growth(figures)
    rate, check, tables = canvas.subplots(1, 3)
    label = f"store + sightings (time per update {shapes['replicas']})"
    _rate_panel(rate, figures["replicas"], "replicas", label, "replicas (one collection)")
    replicas = [p["replicas"] for p in figures["replicas"]]
    check.loglog(
        replicas,
        [p["lease_check_ms"] for p in figures["replicas"]],
        "o-",
        color=OURS,
        label=f"check_leases ({shapes['lease']})",
    )
    check.axhline(
        figures["baseline_lease_check_ms"],
        color=BASE,
        linestyle="--",
        label="the check with no replica (baseline)",
    )
    check.set_xlabel("active replicas")
    check.set_ylabel("lease check, ms (median)")
    check.legend(fontsize=8)
    _ticks_at(check, replicas)
    label = f"store (time per update {shapes['collections']})"
    by_collections = figures["collections"]
    _rate_panel(tables, by_collections, "collections", label, "collections (three replicas)")


def spark_scale(result: Result, canvas: Canvas) -> None:
    """Spark's applied rate (bars: offered) against partitions and collections, the
    baseline shape's rate as a line; the title gives the growth each curve shows."""
    figures = result["figures"]
    shapes = spark_scale_growth(figures)
    base = figures["baseline"]
    for axes, axis in zip(canvas.subplots(1, 2), ("partitions", "collections"), strict=True):
        points = figures[axis]
        counts = [p[axis] for p in points]
        axes.semilogx(
            counts, [p["applied"] for p in points], "o-", color=OURS, label="applied (Spark, local)"
        )
        axes.semilogx(
            counts, [p["offered"] for p in points], "x:", color=OURS, alpha=0.5, label="offered"
        )
        axes.axhline(
            base["applied"],
            color=BASE,
            linestyle="--",
            label=f"{base['partitions']} partitions, {base['collections']} collections (baseline)",
        )
        axes.set_xlabel(axis)
        axes.set_ylabel("updates/s")
        axes.set_ylim(bottom=0)
        axes.set_title(f"time per update: {shapes[axis]}", fontsize=9)
        axes.legend(fontsize=8)
        _ticks_at(axes, counts)


def curves(result: Result, canvas: Canvas) -> None:
    """Capacity against the consumer's cores per bucket count, the model's predictions
    dashed; and every step's p99 against its offered load."""
    figures = result["figures"]
    points = figures["points"]
    predicted = {(r["cores"], r["buckets"]): r["predicted"] for r in model_rows(result)}
    capacity_axes, latency = canvas.subplots(1, 2)
    for index, buckets in enumerate(sorted({p["buckets"] for p in points})):
        line = [p for p in points if p["buckets"] == buckets]
        color = f"C{index}"
        cores = [p["cores"] for p in line]
        name = f"{buckets} bucket{'s' if buckets > 1 else ''}"
        measured = [p["capacity"] or float("nan") for p in line]  # none: below the ladder
        capacity_axes.plot(cores, measured, marker="o", color=color, label=name)
        modelled = [predicted.get((c, buckets), float("nan")) for c in cores]
        capacity_axes.plot(cores, modelled, linestyle="--", color=color, label=f"{name}, model")
        for p in line:
            steps = sorted(p["steps"], key=lambda s: s["offered"])  # a climb may step down
            latency.plot(
                [s["offered"] for s in steps],
                [s["p99_ms"] for s in steps],
                marker="o",
                color=color,
                linestyle="-" if p["cores"] == 1 else ":",
                label=f"{name}, {p['cores']} core{'s' if p['cores'] > 1 else ''}",
            )
    capacity_axes.set_xlabel("consumer cores (pinned)")
    capacity_axes.set_ylabel(f"capacity, updates/s at p99 <= {figures['bound_ms']:,} ms")
    capacity_axes.set_ylim(bottom=0)
    _ticks_at(capacity_axes, sorted({p["cores"] for p in points}))
    capacity_axes.legend(fontsize=7)
    _target_line(latency, figures["bound_ms"], f"p99 {figures['bound_ms']:,} ms")
    latency.set_yscale("log")
    latency.set_xscale("log")
    latency.set_xlabel("offered updates/s")
    latency.set_ylabel("p99 publish-to-visible (ms)")
    latency.legend(fontsize=6, ncols=2)


DRAW: dict[str, tuple[Callable[[Result, Canvas], None], tuple[float, float]]] = {
    "e2e": (e2e, (15, 4.5)),
    "store_apply": (store_apply, (7, 4.5)),
    "store_delete": (store_delete, (7, 4.5)),
    "ttl_index": (ttl_index, (13, 4.5)),
    "expiration": (expiration, (7, 4.5)),
    "cancel_to_quiet": (cancel_to_quiet, (8, 4.5)),
    "reader_latency": (reader_latency, (13, 4.5)),
    "capacity": (capacity, (13, 4.5)),
    "row_scale": (row_scale, (15, 4.5)),
    "fleet_scale": (fleet_scale, (15, 4.5)),
    "spark_scale": (spark_scale, (11, 4.5)),
    "curves": (curves, (13, 4.5)),
}


def draw_all(benchmarks: Mapping[str, Result], directory: Path) -> dict[str, str]:
    """Draws the plot of every benchmark that ran; returns name -> ``benchmarks/<name>.png``."""
    directory.mkdir(parents=True, exist_ok=True)
    drawn = {}
    for name, (draw, size) in DRAW.items():
        result = benchmarks.get(name)
        if result is None or result.get("status") != "ok":
            continue
        canvas = Canvas(figsize=size, layout="constrained")
        try:
            draw(result, canvas)
            canvas.savefig(directory / f"{name}.png", dpi=100)
        except Exception:  # a plot must not cost the report its table
            logger.exception("could not draw the plot of %s", name)
            continue
        drawn[name] = f"{directory.name}/{name}.png"
    return drawn
