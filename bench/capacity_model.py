"""A capacity model: what a load needs, from costs measured at a few points.

Pure (plain values in, plain values out), for the benchmark, the report and the docs'
capacity plan alike. Two kinds of cost:

- CPU by process kind (:class:`Cost`: seconds per update applied, and seconds per second
  whatever the load), fitted by :func:`fit` over the steps of one measured point, for the
  consumer's driver and executors, Redis's primaries together, the broker and the load
  generator (:class:`Costs`);
- the consumer's micro-batch time and the latency it gives (``bench/batch_model.py``):
  the consumer is busy all the time, and a batch costs per batch and per task as well as
  per update, so what it carries within p99 1 s is bound by its batch time, not its CPU.

:func:`limits` gives what each resource carries at a :class:`Point` (its batches' shape,
its busiest primary, and whether the services share its cores): the consumer's batches within the
latency bound (slowed, where shared, by what the services take of the cores); the busiest
Redis primary, one core serving its share of the buckets; the services' cores when apart.
:func:`predict` is the lowest.

:func:`plan` turns the same costs into what a fleet needs: consumer processes of a given
size, a task per core; Redis primaries and broker cores each loaded no more than the
busiest measured in a step that held; partitions as many as tasks or primaries, whichever
is more, each bucket on its own.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

from bench.batch_model import BatchCost, Latency, Shape, highest, most_rate, steady_time

MAX_RATE = 1e9  # updates/s: the search's ceiling where nothing is paid per update


@dataclasses.dataclass(frozen=True)
class Cost:
    """One kind's CPU: seconds per update, and seconds per second whatever the load."""

    per_update: float
    fixed: float = 0.0

    def __add__(self, other: Cost) -> Cost:
        return Cost(self.per_update + other.per_update, self.fixed + other.fixed)

    def cpu(self, rate: float) -> float:
        """CPU seconds a second at ``rate`` updates a second."""
        return self.fixed + self.per_update * rate

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
    def services(self) -> Cost:
        """Redis, the broker and the load generator."""
        return self.redis + self.broker + self.load

    @property
    def broker_per_request(self) -> float:
        """The broker's CPU seconds per request."""
        return self.broker.per_update * self.updates_per_request


@dataclasses.dataclass(frozen=True)
class Model:
    """The costs a prediction stands on: the batch time, the latency, CPU by kind."""

    batch: BatchCost
    latency: Latency
    costs: Costs


@dataclasses.dataclass(frozen=True)
class Point:
    """Where the work runs: the batches' shape (partitions, cores, updates a request, the
    trigger), the busiest primary's share of the collection, the services' cores
    (``shared``: the consumer's own)."""

    shape: Shape
    busiest_primary: float
    service_cores: int
    shared: bool


def stretch(costs: Costs, point: Point, rate: float) -> float:
    """How much longer the consumer's work takes at ``rate`` for the services' CPU on its
    cores: the cores its tasks would use against the cores left (1 when apart)."""
    if not point.shared:
        return 1.0
    cores = point.shape.cores
    left = cores - costs.services.cpu(rate)
    wanted = min(cores, point.shape.partitions)
    return math.inf if left <= 0 else max(1.0, wanted / left)


def batch_time(model: Model, point: Point, rate: float) -> float:
    """A batch's seconds under a steady ``rate`` at ``point``."""
    return steady_time(model.batch, point.shape, rate, stretch(model.costs, point, rate))


def p99(model: Model, point: Point, rate: float) -> float:
    """Publish-to-visible p99 (seconds) under a steady ``rate`` at ``point``."""
    return model.latency.p99(batch_time(model, point, rate), point.shape.trigger_s)


def limits(model: Model, point: Point, bound_s: float) -> dict[str, float]:
    """Each resource's most updates a second (see the module's docstring)."""
    costs = model.costs
    upper = min(most_rate(model.batch, point.shape), MAX_RATE)
    share = point.busiest_primary
    busiest = Cost(costs.redis.per_update * share, costs.redis.fixed * share)
    found = {
        "consumer batches": highest(lambda rate: p99(model, point, rate) <= bound_s, upper),
        "busiest Redis primary": busiest.rate(1),
    }
    if not point.shared:
        found["service cores"] = costs.services.rate(point.service_cores)
    return found


def predict(model: Model, point: Point, bound_s: float) -> tuple[float, str]:
    """The predicted capacity at ``point`` (updates/s) and the resource that bounds it."""
    found = limits(model, point, bound_s)
    bottleneck = min(found, key=found.__getitem__)
    return found[bottleneck], bottleneck


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
class Fleet:
    """A fleet's load: ``replicas`` each sending so many updates in so many requests a
    second; the largest collection carries ``largest_share`` of the updates."""

    replicas: int
    updates_per_replica_s: float
    requests_per_replica_s: float
    largest_share: float = 1.0


@dataclasses.dataclass(frozen=True)
class Held:
    """The busiest a service's core was in a measured step that held (CPU seconds a
    second): a plan loads none more."""

    primary: float
    broker: float


@dataclasses.dataclass(frozen=True)
class Plan:
    """What a fleet needs (see :func:`plan`)."""

    updates_per_s: float
    requests_per_s: float
    process_cores: int
    process_capacity: float  # updates/s one consumer process carries within the bound
    consumer_processes: int
    redis_primaries: int
    partitions: int
    broker_cores: int
    largest_buckets: int  # the buckets of the largest collection, each on its own partition

    @property
    def consumer_cores(self) -> int:
        return self.consumer_processes * self.process_cores


def plan(
    model: Model, fleet: Fleet, process_cores: int, held: Held, bound_s: float, trigger_s: float
) -> Plan:
    """Consumer processes of ``process_cores`` cores, Redis primaries, partitions and
    broker cores for ``fleet``: each process on cores of its own with a task per core,
    carrying what the batch model says it does within ``bound_s`` at ``trigger_s``; each
    primary and broker core loaded as ``held`` (an upper bound: they may hold more). The
    agents' own CPU is the replicas', not counted. The largest collection needs as many
    buckets as its share of the partitions."""
    updates = fleet.replicas * fleet.updates_per_replica_s
    requests = fleet.replicas * fleet.requests_per_replica_s
    per_request = fleet.updates_per_replica_s / fleet.requests_per_replica_s
    shape = Shape(process_cores, process_cores, per_request, trigger_s)
    alone = Point(shape, busiest_primary=0.0, service_cores=process_cores, shared=False)
    carried = limits(model, alone, bound_s)["consumer batches"]
    if carried <= 0:
        raise ValueError(f"a consumer process carries nothing within {bound_s} s")

    def units(cpu: float, per_unit: float, what: str) -> int:
        if per_unit <= 0:
            raise ValueError(f"no measured step held any {what} load")
        return max(1, math.ceil(cpu / per_unit))

    processes = max(1, math.ceil(updates / carried))
    primaries = units(model.costs.redis.cpu(updates), held.primary, "Redis")
    broker_cpu = model.costs.broker_per_request * requests + model.costs.broker.fixed
    partitions = max(processes * process_cores, primaries)
    return Plan(
        updates_per_s=updates,
        requests_per_s=requests,
        process_cores=process_cores,
        process_capacity=carried,
        consumer_processes=processes,
        redis_primaries=primaries,
        partitions=partitions,
        broker_cores=units(broker_cpu, held.broker, "broker"),
        largest_buckets=math.ceil(partitions * fleet.largest_share),
    )
