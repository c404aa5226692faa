"""A capacity model: what a load needs, from CPU seconds per update measured at one point.

Pure (plain values in, plain values out), for the benchmark, the report and the docs'
capacity plan alike. Each process kind's CPU is a :class:`Cost`: seconds per update
applied, and seconds per second whatever the load (``fixed``: the trigger's batches come
ten times a second, loaded or not), fitted by :func:`fit` over the steps of one measured
point. :class:`Costs` holds them for the consumer's driver process, its executors (the JVM
and the Python workers that apply), Redis's primaries together, the broker and the load
generator. Each resource can carry at most so many updates a second (``(cores - fixed) /
per update``):

- the consumer's cores, for its driver and executors;
- its tasks: Spark runs one task per Kafka partition with data, at most one per core, so
  ``min(cores, tasks)`` cores for the executors (with one bucket, one partition: one core
  whatever the count; Amdahl's serial part);
- its driver, one Python thread: one core;
- the busiest Redis primary, one core serving its share of the collection's buckets;
- the services' cores (Redis, the broker, the load generator) when apart from the
  consumer's; when they share the consumer's cores instead, the two core limits are one,
  for every kind at once.

The prediction is the lowest of these, times ``usable``: the share of the bottleneck that
can be used with p99 publish-to-visible within its bound (below saturation: queues wait).
``usable`` is calibrated at the point the costs come from (:func:`calibrate`), so that
point's prediction is its measurement and every other point tests the model.

:func:`plan` turns the same costs into what a fleet needs: consumer cores and driver
processes, Redis primaries, partitions (as many as tasks or primaries, whichever is
more, each bucket on its own) and broker cores, each at ``usable`` of a core.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence


@dataclasses.dataclass(frozen=True)
class Cost:
    """One kind's CPU: seconds per update, and seconds per second whatever the load."""

    per_update: float
    fixed: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.per_update + other.per_update, self.fixed + other.fixed)

    def rate(self, cores: float) -> float:
        """The most updates a second ``cores`` carry (0 when the fixed part fills them; no
        bound from a kind that costs nothing per update, e.g. a broker not measured)."""
        if self.per_update == 0:
            return math.inf
        return max(0.0, cores - self.fixed) / self.per_update


def fit(samples: Sequence[tuple[float, float]]) -> Cost:
    """A :class:`Cost` from (updates/s, CPU seconds/s) samples: the least-squares line,
    its slope the cost per update and its intercept the fixed part. With one sample, or a
    line that does not rise (noise), all of it per update at the samples' mean."""
    if not samples:
        raise ValueError("no samples to fit")
    rates = [r for r, _ in samples]
    mean_rate = sum(rates) / len(rates)
    mean_cpu = sum(c for _, c in samples) / len(samples)
    spread = sum((r - mean_rate) ** 2 for r in rates)
    if spread > 0:
        slope = sum((r - mean_rate) * (c - mean_cpu) for r, c in samples) / spread
        fixed = mean_cpu - slope * mean_rate
        if slope > 0 and fixed >= 0:
            return Cost(slope, fixed)
        if slope > 0:  # a negative intercept: a line through the origin
            return Cost(sum(r * c for r, c in samples) / sum(r * r for r in rates))
    return Cost(mean_cpu / mean_rate)


@dataclasses.dataclass(frozen=True)
class Costs:
    """The CPU of each process kind (the broker's per update, from its requests)."""

    driver: Cost
    executors: Cost
    redis: Cost
    broker: Cost
    load: Cost
    updates_per_request: float

    @property
    def consumer(self) -> Cost:
        """The consumer's: its driver and executors."""
        return self.driver + self.executors

    @property
    def services(self) -> Cost:
        """Redis, the broker and the load generator."""
        return self.redis + self.broker + self.load

    @property
    def broker_per_request(self) -> float:
        """The broker's CPU seconds per request."""
        return self.broker.per_update * self.updates_per_request


@dataclasses.dataclass(frozen=True)
class Point:
    """Where the work runs: the consumer's cores, its tasks, the busiest primary's share
    of the collection, and the services' cores (``shared``: the consumer's own)."""

    cores: int
    tasks: int
    busiest_primary: float
    service_cores: int
    shared: bool


def limits(costs: Costs, point: Point) -> dict[str, float]:
    """Each resource's most updates a second at full use (see the module's docstring)."""
    share = point.busiest_primary
    busiest = Cost(costs.redis.per_update * share, costs.redis.fixed * share)
    found = {
        "consumer tasks": costs.executors.rate(min(point.cores, point.tasks)),
        "driver": costs.driver.rate(1),
        "busiest Redis primary": busiest.rate(1),
    }
    if point.shared:
        found["shared cores"] = (costs.consumer + costs.services).rate(point.cores)
    else:
        found["consumer cores"] = costs.consumer.rate(point.cores)
        found["service cores"] = costs.services.rate(point.service_cores)
    return found


def predict(costs: Costs, point: Point, usable: float) -> tuple[float, str]:
    """The predicted capacity at ``point`` (updates/s) and the resource that bounds it."""
    found = limits(costs, point)
    bottleneck = min(found, key=found.__getitem__)
    return usable * found[bottleneck], bottleneck


def calibrate(costs: Costs, point: Point, measured: float) -> float:
    """The usable share of the bottleneck at ``point``, where ``measured`` is its capacity."""
    bound = min(limits(costs, point).values())
    return measured / bound if bound else math.nan


def error(predicted: float, measured: float) -> float:
    """The prediction's error relative to the measurement (+0.1: 10% too high)."""
    return predicted / measured - 1 if measured else math.nan


def efficiency(capacity: float, cores: int, one_core: float) -> float:
    """Scaling efficiency: capacity at ``cores`` against ``cores`` times that at one core
    (1 = linear; at 2 cores, capacity at 2 / twice capacity at 1)."""
    return capacity / (cores * one_core) if one_core else math.nan


def costs_of(
    steps: Sequence[tuple[float, Mapping[str, float]]],
    kinds: Mapping[str, tuple[str, ...]],
    per_request: float,
) -> Costs:
    """:class:`Costs` fitted (:func:`fit`) over steps of one point.

    Args:
        steps: per step, its applied updates/s and CPU seconds per second by process kind
            (``bench/cpu.py``).
        kinds: the process kinds making up each of ``driver``, ``executors``, ``redis``,
            ``broker`` and ``load``.
        per_request: updates per Kafka request (message).
    """

    def of(part: str) -> Cost:
        return fit([(rate, sum(cpu.get(k, 0.0) for k in kinds[part])) for rate, cpu in steps])

    return Costs(
        driver=of("driver"),
        executors=of("executors"),
        redis=of("redis"),
        broker=of("broker"),
        load=of("load"),
        updates_per_request=per_request,
    )


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a fleet needs (see :func:`plan`)."""

    updates_per_s: float
    requests_per_s: float
    consumer_cores: int
    consumer_processes: int
    redis_primaries: int
    partitions: int
    broker_cores: int
    largest_buckets: int  # the buckets of the largest collection, each on its own partition


def plan(
    costs: Costs, replicas: int, updates_per_replica_s: float, requests_per_replica_s: float,
    usable: float, largest_share: float = 1.0,
) -> Plan:  # fmt: skip
    """Cores, consumer processes, Redis primaries, partitions and broker cores for
    ``replicas`` each sending ``updates_per_replica_s`` updates in ``requests_per_replica_s``
    requests a second: each unit (a core, a driver, a primary) carries ``usable`` of the
    updates it could at full use, its fixed part paid on each (an upper bound for a
    consumer process of several cores, which pays it once). The agents' own CPU is the
    replicas', not counted. The largest collection, ``largest_share`` of the updates, needs
    as many buckets as its part of the partitions."""
    updates = replicas * updates_per_replica_s
    requests = replicas * requests_per_replica_s

    def units(cost: Cost, load: float = updates) -> int:
        carried = usable * cost.rate(1)  # updates (or requests) a second one unit carries
        if carried <= 0:
            raise ValueError(f"a core carries no updates: its fixed part fills it ({cost})")
        return max(1, math.ceil(load / carried))

    per_request = Cost(costs.broker_per_request, costs.broker.fixed)
    primaries = units(costs.redis)
    partitions = max(units(costs.executors), primaries)
    return Plan(
        updates_per_s=updates,
        requests_per_s=requests,
        consumer_cores=units(costs.consumer),
        consumer_processes=units(costs.driver),
        redis_primaries=primaries,
        partitions=partitions,
        broker_cores=units(per_request, requests),
        largest_buckets=math.ceil(partitions * largest_share),
    )
