"""The consumer's micro-batch time, and the load it carries within a latency bound: pure.

Measured on 2026-12-03: the consumer is busy all the time, and what a batch costs is not
only its updates. A batch of ``n`` updates over ``m`` tasks (one per Kafka partition with
data) on ``k`` cores takes (:class:`BatchCost`)::

    T = per_batch + waves * per_task + (serial + (per_update - serial) * waves / m) * n

with ``waves = ceil(m / k)``: the batch's own work (planning, offsets, the commit) once;
each task's (a Python worker call, its Redis functions' round trips) in waves of ``k``
at a time; each update's spread over the waves, but for its ``serial`` part (the
driver's). On one core ``waves = m``: 16 buckets pay 16 tasks' cost one after another.

Under a steady load of ``r`` updates a second a batch carries what arrived while the one
before ran (:func:`steady_time`): ``T = fixed / (1 - slope * r)`` once that is past the
trigger interval; below it, batches start on the trigger. An update waits for the next
batch to start and then for it to end, so publish-to-visible p99 follows the batch
interval plus the batch time (:class:`Latency`, fitted). :func:`capacity` is the highest
rate whose p99 is within the bound.

Where the consumer shares its cores with Redis, the broker and the load generator, those
take their CPU first: the consumer's time stretches by how much more it would use than
is left (``stretch``, from the services' CPU at that rate).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Sequence


@dataclasses.dataclass(frozen=True)
class BatchCost:
    """Seconds a batch, a task and an update cost on one core (see the module's docstring)."""

    per_batch: float
    per_task: float
    per_update: float
    serial: float = 0.0  # of per_update: the part no more cores shorten

    def fixed(self, tasks: int, cores: int) -> float:
        """A batch's time whatever its updates."""
        return self.per_batch + _waves(tasks, cores) * self.per_task

    def slope(self, tasks: int, cores: int) -> float:
        """A batch's time per update."""
        spread = self.per_update - self.serial
        return self.serial + spread * _waves(tasks, cores) / max(tasks, 1)

    def time(self, updates: float, tasks: int, cores: int) -> float:
        """A batch of ``updates`` over ``tasks`` on ``cores``."""
        return self.fixed(tasks, cores) + self.slope(tasks, cores) * updates


def _waves(tasks: int, cores: int) -> int:
    return max(1, math.ceil(tasks / cores))


def steady_time(
    cost: BatchCost, rate: float, tasks: int, cores: int, trigger_s: float, stretch: float = 1.0
) -> float:
    """The batch time under a steady ``rate`` (inf where batches fall behind for good)."""
    fixed = stretch * cost.fixed(tasks, cores)
    slope = stretch * cost.slope(tasks, cores)
    on_trigger = fixed + slope * rate * trigger_s  # a batch of what one interval brings
    if on_trigger <= trigger_s:
        return on_trigger
    if slope * rate >= 1:
        return math.inf
    return fixed / (1 - slope * rate)  # T = fixed + slope * rate * T


@dataclasses.dataclass(frozen=True)
class Latency:
    """p99 publish-to-visible against a batch's interval plus its time: ``scale`` times
    that, plus ``offset`` (the producer's batching, the probe watcher's polls)."""

    scale: float
    offset: float

    def p99(self, batch_s: float, trigger_s: float) -> float:
        return self.scale * (max(batch_s, trigger_s) + batch_s) + self.offset


def fit_latency(samples: Sequence[tuple[float, float]]) -> Latency:
    """A :class:`Latency` from (interval + batch time, p99) pairs, seconds: the
    least-squares line; where it does not rise (too few or too alike samples), the
    offset alone over a scale of 1."""
    if not samples:
        raise ValueError("no steps to fit the latency over")
    xs = [x for x, _ in samples]
    ys = [y for _, y in samples]
    if len(set(xs)) > 1:
        slope, intercept = statistics.linear_regression(xs, ys)
        if slope > 0:
            return Latency(slope, intercept)
    return Latency(1.0, statistics.fmean(y - x for x, y in samples))


@dataclasses.dataclass(frozen=True)
class BatchSample:
    """One measured step on one core: its tasks, updates a batch and seconds a batch."""

    tasks: int
    updates: float
    seconds: float


def fit_cost(samples: Sequence[BatchSample], serial: float = 0.0) -> BatchCost:
    """A :class:`BatchCost` from steps on one core (where ``waves`` is the task count).

    Per task count, the least-squares line of batch time against updates a batch: its
    slope an update's cost (their mean, weighted by steps), its intercept that count's
    fixed time; then the fixed times' line against the task count: the cost a task, and a
    batch's at none. Needs two task counts to tell a task from a batch (with one, all of
    the fixed time is the batch's). Noise cannot make a cost negative: a falling line is
    read as none. ``serial`` is the per-update cost's part that more cores do not shorten
    (at most all of it)."""
    by_tasks: dict[int, list[BatchSample]] = {}
    for sample in samples:
        by_tasks.setdefault(sample.tasks, []).append(sample)
    lines = {m: _line([(s.updates, s.seconds) for s in group]) for m, group in by_tasks.items()}
    if not lines:
        raise ValueError("no steps to fit the batch time over")
    weights = {m: len(group) for m, group in by_tasks.items()}
    per_update = sum(weights[m] * slope for m, (slope, _) in lines.items()) / sum(weights.values())
    fixed = [(float(m), intercept) for m, (_, intercept) in lines.items()]
    per_task, per_batch = _line(fixed) if len(fixed) > 1 else (0.0, fixed[0][1])
    per_update = max(per_update, 0.0)
    return BatchCost(
        per_batch=max(per_batch, 0.0),
        per_task=max(per_task, 0.0),
        per_update=per_update,
        serial=min(max(serial, 0.0), per_update),
    )


def _line(points: Sequence[tuple[float, float]]) -> tuple[float, float]:
    """Slope and intercept; for a single x, no slope and the mean."""
    xs = [x for x, _ in points]
    ys = [y for _, y in points]
    if len(set(xs)) < 2:
        return 0.0, statistics.fmean(ys)
    slope, intercept = statistics.linear_regression(xs, ys)
    if slope < 0:
        return 0.0, statistics.fmean(ys)
    return slope, intercept


def highest(holds: Callable[[float], bool], upper: float) -> float:
    """The highest rate in [0, ``upper``] at which ``holds`` (true at lower rates once at
    one) is true, to a part in a million; 0 when it holds at none."""
    low, high = 0.0, upper
    if not math.isfinite(high) or high <= 0:
        return 0.0
    while high - low > upper * 1e-6:
        middle = (low + high) / 2
        low, high = (middle, high) if holds(middle) else (low, middle)
    return low
