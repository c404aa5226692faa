"""The end-to-end benchmark's load: churning introspection rows, probes, and their messages.

See ``bench/e2e.py`` for what is measured and how.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Sequence

from collection_manager.core.requests import Append, Update
from collection_manager.core.specs import CollectionSpec, Value
from collection_manager.kafka.partitioning import java_partition as partition_of
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.ops import double_positions
from collection_manager.storage.rows import encode_row
from schemas.codec import encode_request
from schemas.introspection import introspection_specs

PARTITIONS = 4


REPLICAS = ("r0", "r1", "r2")


@dataclasses.dataclass(frozen=True)
class Probe:
    """A unique row whose arrival in ``contents_key`` (as hash field ``field``) is watched."""

    seq: int
    contents_key: str
    field: str


@dataclasses.dataclass(frozen=True)
class Message:
    """One encoded request, ready to send."""

    key: bytes
    value: bytes
    updates: int
    probe: Probe | None = None
    partition: int | None = None  # its bucket's assigned partition; None: the key picks


def _value(kind: str, n: int) -> Value:
    if kind == "string":
        return f"v{n}"
    if kind == "double":
        return n + 0.5
    if kind == "boolean":
        return n % 2 == 0
    return n


def row_of(spec: CollectionSpec, replica: str, key: int, version: int) -> tuple[Value, ...]:
    """A row of ``spec``: ``key`` in the column after ``replica_id``, ``version`` in the rest."""
    columns = spec.columns
    return (replica, _value(columns[1].type, key), *(_value(c.type, version) for c in columns[2:]))


class Churn:
    """Appends that keep ``keys`` rows per replica in each collection and update them."""

    def __init__(
        self,
        specs: Sequence[CollectionSpec],
        keys: int,
        updates: int,
        replicas: Sequence[str] = REPLICAS,
    ) -> None:
        self.specs = specs
        self.keys = keys
        self.half = updates // 2
        self.replicas = tuple(replicas)
        self.versions = {(s.name, r): [0] * keys for s in specs for r in self.replicas}
        self.cursors = dict.fromkeys(self.versions, 0)

    def seed(self) -> list[Append]:
        """Inserts of every row at version 0, ``2 * half`` per request."""
        out = []
        for spec in self.specs:
            for replica in self.replicas:
                for first in range(0, self.keys, 2 * self.half):
                    keys = range(first, min(first + 2 * self.half, self.keys))
                    rows = [(row_of(spec, replica, k, 0), 1) for k in keys]
                    out.append(Append(spec.name, replica, 1, tuple(rows), produced_at=0))
        return out

    def update(self, spec: CollectionSpec, replica: str, extra: Sequence[Update] = ()) -> Append:
        """The next ``half`` rows of ``replica`` retracted and re-inserted one version on."""
        versions = self.versions[spec.name, replica]
        cursor = self.cursors[spec.name, replica]
        updates: list[Update] = []
        for j in range(self.half):
            key = (cursor + j) % self.keys
            version = versions[key]
            updates.append((row_of(spec, replica, key, version), -1))
            updates.append((row_of(spec, replica, key, version + 1), 1))
            versions[key] = version + 1
        self.cursors[spec.name, replica] = (cursor + self.half) % self.keys
        return Append(spec.name, replica, 1, (*updates, *extra), produced_at=0)


def _message(request: Append, probe: Probe | None = None) -> Message:
    return Message(
        request.collection.encode(), encode_request(request), len(request.updates), probe
    )


def workload(
    specs: Sequence[CollectionSpec], args: argparse.Namespace
) -> tuple[list[Message], list[Message]]:
    """The encoded seed and load requests."""
    churn = Churn(specs, args.keys, args.updates)
    seed = [_message(request) for request in churn.seed()]
    # Replica-major, so consecutive requests go to different collections (and partitions).
    pairs = [(spec, replica) for replica in REPLICAS for spec in specs]
    load = []
    for n in range(round(args.rate * args.duration / args.updates)):
        spec, replica = pairs[n % len(pairs)]
        if n % args.probe_every:
            load.append(_message(churn.update(spec, replica)))
            continue
        row = row_of(spec, "probe", n, 0)
        probe = Probe(
            n, CollectionKeys(spec.name).contents, encode_row(row, double_positions(spec))
        )
        load.append(_message(churn.update(spec, replica, [(row, 1)]), probe))
    return seed, load


def java_partition(key: bytes, partitions: int = PARTITIONS) -> int:
    """The partition of a keyed message on the benchmark's topics."""
    return partition_of(key, partitions)


def bench_specs(count: int, partitions: int, token: str) -> list[CollectionSpec]:
    """``count`` collections cycling through the introspection schemas, collection ``i`` on
    partition ``i % partitions``; the first five keep their schema's name before ``-e2e-``."""
    schemas = introspection_specs()
    specs = []
    for i in range(count):
        spec = schemas[i % len(schemas)]
        base = spec.name if i < len(schemas) else f"{spec.name}-{i // len(schemas)}"
        name = spread_name(f"{base}-e2e-{token}", i % partitions, partitions)
        specs.append(dataclasses.replace(spec, name=name))
    return specs


def add_shape_options(parser: argparse.ArgumentParser) -> None:
    """The topic's partitions and the number of collections the load goes to."""
    parser.add_argument("--partitions", type=int, default=PARTITIONS, help="of the topic")
    parser.add_argument(
        "--collections",
        type=int,
        default=len(introspection_specs()),
        help="collections the load goes to, cycling through the introspection schemas",
    )


def spread_name(base: str, partition: int, partitions: int = PARTITIONS) -> str:
    """``base`` with the first suffix that lands it on ``partition``.

    Random names would put the five collections on the four partitions differently in
    every run (sometimes on two of them), and Spark's batch time follows its busiest
    partition; fixed placement (two on partition 0, one on each other) keeps runs alike.
    """
    return next(
        name
        for n in range(10_000)
        if java_partition((name := f"{base}-{n}").encode(), partitions) == partition
    )
