"""One row of the benchmark report's table: a figure, its baseline and its target."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from bench.targets import Target

Result = dict[str, Any]  # one benchmark's record: "scale" and "figures"


@dataclasses.dataclass(frozen=True)
class Figure:
    """One row of the report's table.

    Attributes:
        benchmark: the benchmark module's name.
        name: what was measured.
        value: the measured value (None when it could not be measured).
        unit: the unit of ``value`` and ``baseline``.
        baseline: the same figure of the baseline, measured in the same run, if any.
        baseline_name: what the baseline is.
        target: the target ``value`` is held to, if any.
        tested: False when the run's scale cannot test the target (shown as n/a).
        note: a caveat shown beside the figure (scale, what a ratio means).
    """

    benchmark: str
    name: str
    value: float | None
    unit: str
    baseline: float | None = None
    baseline_name: str = ""
    target: Target | None = None
    tested: bool = True
    note: str = ""

    @property
    def ratio(self) -> float | None:
        """``value / baseline``, or None without both (or with a zero baseline)."""
        if self.value is None or not self.baseline:
            return None
        return self.value / self.baseline

    @property
    def verdict(self) -> str:
        """``met``, ``MISSED``, ``n/a`` (not testable at this scale) or empty (no target)."""
        if self.target is None:
            return ""
        if not self.tested or self.value is None or math.isnan(self.value):
            return "n/a"
        return "met" if self.target.met(self.value) else "MISSED"
