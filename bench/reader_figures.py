"""The report's rows of ``bench.reader_latency``: each busy phase against the idle one."""

from __future__ import annotations

from typing import Any

from bench import targets
from bench.figure import Figure, Result
from bench.targets import Target

# (summary key, label, target) of the figures of each busy phase and command.
READER_STATS: tuple[tuple[str, str, Target | None], ...] = (
    ("p50_ms", "p50", None),
    ("p99_ms", "p99", targets.READER_P99_MS),
    ("max_ms", "max", targets.READER_MAX_MS),
)


def _busy_phases(phases: dict[str, Any]) -> dict[str, tuple[str, str, bool]]:
    """Per busy phase: its label, a note, and whether the run's scale tests the targets."""
    deleted = phases["deleting"]["rows_deleted"]
    full_size = deleted >= targets.READER_DELETE_ROWS
    small = f"target is for {targets.READER_DELETE_ROWS:,} rows; not run at that size"
    rate = phases["applying"]["applied_updates_per_s"]
    busy = {
        "applying": (
            "while the store applies at full speed",
            f"{rate:,.0f} updates/s applied meanwhile",
            True,
        ),
        "deleting": (
            f"while a delete of {deleted:,} rows runs",
            "" if full_size else small,
            full_size,
        ),
    }
    # Phases added later (issue 32): absent from older results.
    big = f"target is for {targets.READER_BIG_ROWS:,} rows; not run at that size"
    if "reading" in phases:
        read = phases["reading"]["rows_read"]
        full = read >= targets.READER_BIG_ROWS
        label = f"while a stepped full read of {read:,} rows runs"
        busy["reading"] = (label, "" if full else big, full)
    if "expiring" in phases:
        expired = phases["expiring"]["rows_expired"]
        busy["expiring"] = (f"while {expired:,} rows whose TTL ended are retracted", "", True)
    if "dropping" in phases:
        dropped = phases["dropping"]["rows_dropped"]
        calls = phases["dropping"]["function_calls"]
        full = dropped >= targets.READER_BIG_ROWS
        note = f"{calls:,} function call{'' if calls == 1 else 's'}" + ("" if full else f"; {big}")
        busy["dropping"] = (f"while a collection of {dropped:,} rows is dropped", note, full)
    return busy


def _phase_figures(
    command: str, mine: dict[str, Any], idle: dict[str, Any], busy: tuple[str, str, bool]
) -> list[Figure]:
    label, note, tested = busy
    if mine["busy_replies"]:
        note = "; ".join(filter(None, (note, f"{mine['busy_replies']:,} BUSY replies")))
    return [
        Figure(
            "reader_latency",
            f"{command} {stat} {label}",
            mine[key],
            "ms",
            idle[key],
            "consumer idle",
            target,
            tested=tested,
            note=note,
        )
        for key, stat, target in READER_STATS
    ]


def reader_latency(result: Result) -> list[Figure]:
    """A separate reader's PING and point-query latency per busy phase against idle."""
    figures = result["figures"]
    phases = figures["phases"]
    rows = [
        figure
        for phase, busy in _busy_phases(phases).items()
        for command in figures["commands"]
        for figure in _phase_figures(command, phases[phase][command], phases["idle"][command], busy)
    ]
    deleting = phases["deleting"]
    calls = deleting["function_calls"]
    rows.append(
        Figure(
            "reader_latency",
            f"indexed delete of {deleting['rows_deleted']:,} rows (what blocked the readers)",
            deleting["delete_ms"],
            "ms",
            note=f"{calls:,} function call{'' if calls == 1 else 's'}, "
            f"{deleting['function_ms']:,.0f} ms inside Redis",
        )
    )
    return rows
