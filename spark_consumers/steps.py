"""Where a micro-batch's time goes, step by step, for the metrics and the breakdown bench.

The executors time their steps per chunk of a partition and report the sums in the
partition's summary row; the driver times its own around them. ``StepTimer`` is a
stopwatch that adds each step's time to its total.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager

# What the appliers on the executors do with a chunk, in order (summed over tasks: they run
# in parallel, so these may add up to more than the driver's ``collect``).
EXECUTOR_STEPS = ("decode", "epochs", "dead_letters", "apply", "sightings")
# What the driver does in a batch's foreachBatch, in order: ``collect`` runs the executors.
DRIVER_STEPS = ("check", "collect", "replicas", "progress", "record")


def step_column(step: str) -> str:
    """The summary row's column holding an executor step's microseconds."""
    return f"{step}_us"


class StepTimer:
    """Microseconds spent per step."""

    def __init__(self) -> None:
        self.micros: dict[str, int] = {}

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        began = time.perf_counter()
        try:
            yield
        finally:
            spent = int((time.perf_counter() - began) * 1_000_000)
            self.micros[name] = self.micros.get(name, 0) + spent
