"""Capacity read from a path's steps (``bench.capacity``): pure, for the benchmark and the
report alike.

A step is one load offered at one rate (``bench.capacity.step_figures``); a climb is one
path's steps at rising rates; a path climbs once or, to take the median, several times.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping, Sequence
from typing import Any


def sustained(step: Mapping[str, Any]) -> bool:
    """Everything offered was applied (within the drain timeout)."""
    return math.isfinite(step["drain_s"])


def capacity(steps: Sequence[Mapping[str, Any]], p99_bound_ms: float) -> float | None:
    """The highest offered rate of a sustained step with p99 within ``p99_bound_ms``."""
    within = [s["offered"] for s in steps if sustained(s) and s["p99_ms"] <= p99_bound_ms]
    return max(within, default=None)


def climbs(steps: Sequence[Mapping[str, Any]]) -> list[list[Mapping[str, Any]]]:
    """A path's steps grouped by climb, in order (results without ``climb`` are one)."""
    grouped: dict[int, list[Mapping[str, Any]]] = {}
    for step in steps:
        grouped.setdefault(step.get("climb", 0), []).append(step)
    return [grouped[key] for key in sorted(grouped)]


def median_capacity(steps: Sequence[Mapping[str, Any]], p99_bound_ms: float) -> float | None:
    """The median over climbs of each climb's capacity (a climb with none counts 0);
    None when that median is 0."""
    found = [capacity(climb, p99_bound_ms) or 0.0 for climb in climbs(steps)]
    middle = statistics.median(found) if found else 0.0
    return middle or None
