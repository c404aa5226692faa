"""The report's rows and table of ``bench.batch_breakdown``: pure, from its results."""

from __future__ import annotations

from bench import targets
from bench.figure import Figure, Result

BASELINE = "plain consumer loop, same load"


def batch_breakdown(result: Result) -> list[Figure]:
    """Per trigger interval: Spark's latency against the baseline's, as ratios, and the
    median batch. One run each: capacity's climbs hold the ratios to issue 32's target."""
    f = result["figures"]
    plain, rate = f["plain"], f"{f['rate']:,.0f} updates/s"
    rows = []
    for run in f["spark"]:
        trigger = f"{run['trigger_ms']} ms trigger"
        for q in ("p50", "p99"):
            rows.append(
                Figure(
                    "batch_breakdown",
                    f"Spark {q} publish-to-visible / baseline's, {rate}, {trigger}",
                    _ratio(run[f"{q}_ms"], plain[f"{q}_ms"]),
                    "",
                    note=f"{run[f'{q}_ms']:,.0f} ms against {plain[f'{q}_ms']:,.0f} ms; one run "
                    f"(the {targets.LATENCY_RATIO.text()} target is judged by capacity's "
                    "medians)",
                )
            )
        rows.append(
            Figure(
                "batch_breakdown",
                f"Spark: median micro-batch (triggerExecution), {trigger}",
                run["spark_ms"]["triggerExecution"],
                "ms",
                plain["p50_ms"],
                f"{BASELINE}: p50 latency",
                note=f"{run['batches']} batches with records",
            )
        )
        if "idle_cpu" in run:  # measured since issue 32's trigger decision
            rows.append(
                Figure(
                    "batch_breakdown",
                    f"Spark idle: CPU seconds per second (every process), {trigger}",
                    run["idle_cpu"]["all"],
                    "CPU s/s",
                    plain["idle_cpu"]["all"],
                    f"{BASELINE.split(',')[0]}, idle",
                    note="an empty topic polled: the price of the trigger interval",
                )
            )
    return rows


def breakdown_details(result: Result) -> list[str]:
    """The markdown table: each phase and step's median per batch, per trigger interval."""
    runs = result["figures"]["spark"]
    header = "| what (median per batch, ms) | " + " | ".join(
        f"trigger {r['trigger_ms']} ms" for r in runs
    )
    lines = [header + " |", "|---|" + "---|" * len(runs)]
    for kind, key in (("Spark", "spark_ms"), ("step", "steps_ms")):
        for name in runs[0][key]:
            cells = " | ".join(f"{r[key][name]:,.1f}" for r in runs)
            lines.append(f"| {kind}: {name} | {cells} |")
    for q in ("p50", "p99"):
        cells = " | ".join(f"{r[f'{q}_ms']:,.0f}" for r in runs)
        lines.append(f"| publish-to-visible {q} | {cells} |")
    if all("idle_cpu" in r for r in runs):
        cells = " | ".join(f"{r['idle_cpu']['all']:.3f}" for r in runs)
        lines.append(f"| idle: CPU s per s, every process | {cells} |")
    plain = result["figures"]["plain"]
    lines += [
        "",
        f"Baseline, same load: the plain loop's p50 {plain['p50_ms']:,.0f} ms and p99 "
        f"{plain['p99_ms']:,.0f} ms"
        + (f", idle {plain['idle_cpu']['all']:.3f} CPU s per s" if "idle_cpu" in plain else "")
        + ". Executor steps are summed over a batch's tasks (they "
        "run in parallel); `driver` is foreachBatch's whole time on the driver.",
    ]
    return lines


def _ratio(value: float, baseline: float) -> float:
    return value / baseline if baseline else float("nan")
