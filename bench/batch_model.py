"""The consumer's micro-batch time, and the load it carries within a latency bound: pure.

Measured on 2026-12-03 and 04: the consumer is busy all the time, and a batch costs more
than its updates. A batch of ``n`` updates in ``m`` tasks on ``k`` cores takes
(:class:`BatchCost`)::

    T = per_batch + waves * per_task + (serial + (per_update - serial) * waves / m) * n

with ``waves = max(1, m / k)``: the batch's own work (planning, offsets, the commit)
once; each task's (a Python worker call, its Redis functions' round trips) ``k`` at a
time; each update's spread over the tasks, but for its ``serial`` part (the driver's).
On one core 16 tasks are paid one after another.

``m`` is the tasks with data (:func:`tasks_with_data`): Spark plans a task only for a
Kafka partition with new records, and ``q`` requests spread over ``P`` partitions (a
bucket each) fill ``P (1 - (1 - 1/P)^q)`` of them on average; at 2,500 updates/s a batch
of 7 requests fills 6 of 16.

Under a steady load of ``r`` updates a second a batch carries what arrived while the one
before ran, or during the trigger interval when that is longer (:func:`steady_time`). An
update waits for the next batch to start and then for it to end, so publish-to-visible
p99 follows the batch interval plus the batch time (:class:`Latency`, fitted).

Where the consumer shares its cores with Redis, the broker and the load generator, those
take their CPU first: the consumer's time stretches by how much more it would use than
is left (``stretch``, from the services' CPU at that rate).
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Callable, Mapping, Sequence

LONGEST_BATCH_S = 3600.0  # a batch past this has fallen behind for good


@dataclasses.dataclass(frozen=True)
class BatchCost:
    """Seconds a batch, a task and an update cost on one core (see the module's docstring)."""

    per_batch: float
    per_task: float
    per_update: float
    serial: float = 0.0  # of per_update: the part no more cores shorten

    def time(self, updates: float, tasks: float, cores: int) -> float:
        """A batch of ``updates`` in ``tasks`` (an expected count: fractional) on ``cores``."""
        waves = max(1.0, tasks / cores)
        spread = (self.per_update - self.serial) * waves / max(tasks, 1.0)
        return self.per_batch + waves * self.per_task + (self.serial + spread) * updates


@dataclasses.dataclass(frozen=True)
class Shape:
    """Where batches run: the topic's partitions with the collection's buckets (one each),
    the consumer's cores, the load's updates a request, the trigger interval."""

    partitions: int
    cores: int
    updates_per_request: float
    trigger_s: float


def tasks_with_data(partitions: int, requests: float) -> float:
    """The expected partitions that ``requests``, each to any of ``partitions`` alike, reach."""
    if partitions <= 1:
        return float(partitions)
    return partitions * (1 - (1 - 1 / partitions) ** requests)


def batch_time(cost: BatchCost, shape: Shape, updates: float) -> float:
    """A batch of ``updates`` as ``shape`` runs it."""
    tasks = tasks_with_data(shape.partitions, updates / shape.updates_per_request)
    return cost.time(updates, tasks, shape.cores)


def steady_time(cost: BatchCost, shape: Shape, rate: float, stretch: float = 1.0) -> float:
    """The batch time under a steady ``rate``: the shortest ``T`` whose batch, of what
    arrives in ``max(T, trigger)``, takes no longer than ``T`` (inf when none does)."""

    def next_batch(seconds: float) -> float:
        return stretch * batch_time(cost, shape, rate * max(seconds, shape.trigger_s))

    if not next_batch(LONGEST_BATCH_S) <= LONGEST_BATCH_S:
        return math.inf
    # The batch time grows with the interval, by less and less (the tasks fill up), so
    # it stays above the interval until one point and below it after: bisect for that.
    low, high = 0.0, LONGEST_BATCH_S
    for _ in range(80):
        middle = (low + high) / 2
        low, high = (low, middle) if next_batch(middle) <= middle else (middle, high)
    return high


def most_rate(cost: BatchCost, shape: Shape) -> float:
    """The rate past which no batch keeps up, whatever its size (inf at no cost an update)."""
    tasks = float(shape.partitions)
    slope = cost.time(1.0, tasks, shape.cores) - cost.time(0.0, tasks, shape.cores)
    return 1 / slope if slope > 0 else math.inf


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
    """One measured step on one core: its tasks with data (expected), updates a batch and
    seconds a batch."""

    tasks: float
    updates: float
    seconds: float


def fit_cost(samples: Sequence[BatchSample], serial: float = 0.0) -> BatchCost:
    """A :class:`BatchCost` from steps on one core (where ``waves`` is the task count):
    the least-squares fit of batch time to a batch's, a task's and an update's cost.

    Needs two task counts to tell a task from a batch (with one, all of the fixed time is
    the batch's). Noise cannot make a cost negative: a term that comes out below zero is
    dropped and the rest fitted again. ``serial`` is the per-update cost's part that more
    cores do not shorten (at most all of it)."""
    if not samples:
        raise ValueError("no steps to fit the batch time over")
    terms = {
        "per_batch": [1.0] * len(samples),
        "per_task": [s.tasks for s in samples],
        "per_update": [s.updates for s in samples],
    }
    if len({s.tasks for s in samples}) < 2:
        del terms["per_task"]
    seconds = [s.seconds for s in samples]
    found = least_squares(terms, seconds)
    while any(v < 0 for v in found.values()) and len(terms) > 1:
        del terms[min(found, key=found.__getitem__)]
        found = least_squares(terms, seconds)
    costs = {
        name: max(found.get(name, 0.0), 0.0) for name in ("per_batch", "per_task", "per_update")
    }
    return BatchCost(**costs, serial=min(max(serial, 0.0), costs["per_update"]))


def least_squares(terms: Mapping[str, Sequence[float]], ys: Sequence[float]) -> dict[str, float]:
    """Each term's coefficient in the least-squares fit of ``ys``: the normal equations over
    columns scaled to one (a second and a million updates alike), solved by elimination; a
    term the others already explain gets 0."""
    names = list(terms)
    scales = [math.sqrt(statistics.fmean(x * x for x in terms[n])) or 1.0 for n in names]
    cols = [[x / scale for x in terms[n]] for n, scale in zip(names, scales, strict=True)]
    rows = [[sum(a * b for a, b in zip(ci, cj, strict=True)) for cj in cols] for ci in cols]
    rhs = [sum(a * y for a, y in zip(c, ys, strict=True)) for c in cols]
    size = len(names)
    for col in range(size):
        pivot = max(range(col, size), key=lambda row: abs(rows[row][col]))
        rows[col], rows[pivot], rhs[col], rhs[pivot] = rows[pivot], rows[col], rhs[pivot], rhs[col]
        if abs(rows[col][col]) < 1e-9 * len(ys):
            continue  # no sample tells this term apart from those before it
        for row in range(size):
            if row != col:
                factor = rows[row][col] / rows[col][col]
                rows[row] = [x - factor * y for x, y in zip(rows[row], rows[col], strict=True)]
                rhs[row] -= factor * rhs[col]
    return {
        name: rhs[i] / rows[i][i] / scales[i] if abs(rows[i][i]) >= 1e-9 * len(ys) else 0.0
        for i, name in enumerate(names)
    }


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
