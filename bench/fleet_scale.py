"""Cost as the fleet grows: more replicas, more collections, each beside its baseline.

- **Replicas** (``--replicas``): the same ``--updates`` appended to one collection by that
  many replicas, each append followed by its replica's heartbeat, applied as the consumer
  applies a partition's chunk (``RedisStore.apply_requests``, then ``ReplicaRecord.record``
  of the sightings), ``--group`` requests per chunk. Baseline: the same updates written
  with one pipelined ``HINCRBY`` each (no atomicity, index, log or sightings).
- **Lease check** (same replica counts): ``Controller.check_leases`` with every replica
  active and a new heartbeat of each recorded before every check, as the consumer records
  them (median of ``--checks``). Baseline: the same check with no replica (reading the
  records and publishing the tick).
- **Collections** (``--collections``): the same updates from three replicas spread
  round-robin over that many collections. Baseline: pipelined ``HINCRBY`` over as many
  hashes.

Every point starts from empty collections. Run:
``.venv/bin/python -m bench.fleet_scale [--replicas 3,30,300] [--collections 1,10,100]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any

import redis

from bench.common import report, services
from bench.store_apply import ROW_SCHEMA
from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller, now_ms
from collection_manager.core.requests import Append, Heartbeat, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.core.ticks import CONTROLLER_ID
from collection_manager.devservices import Endpoints
from collection_manager.kafka.topics import admin_client, create_topic
from collection_manager.storage.client import redis_client
from collection_manager.storage.replicas import ReplicaRecord
from collection_manager.storage.store import RedisStore

TOPIC, PARTITION = "bench", 0
COLLECTIONS_CURVE_REPLICAS = 3  # the replicas of the collections curve


def fleet_requests(
    collections: Sequence[str], replicas: int, updates: int, per_request: int
) -> list[Request]:
    """Appends of fresh rows, replica after replica, collection after collection, each
    followed by its replica's heartbeat (epoch 1)."""
    out: list[Request] = []
    for n in range(updates // per_request):
        replica = f"r{n % replicas}"
        collection = collections[(n // replicas) % len(collections)]
        rows = tuple(((replica, n * per_request + i, n), 1) for i in range(per_request))
        out += [Append(collection, replica, 1, rows, produced_at=0), Heartbeat(replica, 1, n)]
    return out


def _fresh(store: RedisStore, names: Sequence[str]) -> None:
    for name in names:
        store.drop_collection(name)
        store.create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id",)))


def apply_rate(
    store: RedisStore, record: ReplicaRecord, requests: Sequence[Request], group: int
) -> float:
    """Updates per second applied chunk by chunk, sightings recorded, as the consumer does."""
    batch = list(enumerate(requests))
    start = time.perf_counter()
    for first in range(0, len(batch), group):
        chunk = batch[first : first + group]
        store.apply_requests(TOPIC, PARTITION, chunk)
        record.record(TOPIC, PARTITION, chunk, now_ms())
    elapsed = time.perf_counter() - start
    return sum(len(r.updates) for r in requests if isinstance(r, Append)) / elapsed


def baseline_rate(client: redis.Redis, requests: Sequence[Request]) -> float:
    """Updates per second, one pipelined HINCRBY each into its collection's plain hash."""
    appends = [r for r in requests if isinstance(r, Append)]
    start = time.perf_counter()
    for append in appends:
        with client.pipeline(transaction=False) as pipe:
            for row, diff in append.updates:
                pipe.hincrby(f"bench-fleet-plain:{append.collection}", repr(row), diff)
            pipe.execute()
    elapsed = time.perf_counter() - start
    client.delete(*{f"bench-fleet-plain:{a.collection}" for a in appends})
    return sum(len(a.updates) for a in appends) / elapsed


def apply_point(
    client: redis.Redis, collections: int, replicas: int, args: argparse.Namespace
) -> dict[str, float]:
    """The store's and the baseline's rate for one fleet shape, from empty collections."""
    store = RedisStore(client, log_max_length=100_000)
    names = [f"bench-fleet-{c}" for c in range(collections)]
    namespace = f"bench:fleet:{uuid.uuid4().hex[:8]}"
    requests = fleet_requests(names, replicas, args.updates, args.request_updates)
    _fresh(store, names)
    try:
        ours = apply_rate(store, ReplicaRecord(client, namespace), requests, args.group)
    finally:
        for name in names:
            store.drop_collection(name)
        _drop_namespace(client, namespace)
    return {"updates_per_s": ours, "baseline_updates_per_s": baseline_rate(client, requests)}


def _drop_namespace(client: redis.Redis, namespace: str) -> None:
    keys = list(client.scan_iter(match=f"*{namespace}*"))
    if keys:
        client.delete(*keys)


def lease_check_ms(endpoints: Endpoints, replicas: int, checks: int) -> float:
    """Median ms of ``check_leases`` with ``replicas`` active, heartbeats new each time."""
    topic = f"bench-fleet-{uuid.uuid4().hex[:8]}"
    admin = admin_client(endpoints.kafka_bootstrap)
    create_topic(admin, topic, 1)
    config = ReplicaConfig(replica_namespace=f"bench:fleet:{topic}", collection_suffix="-none")
    client = redis_client(endpoints.redis_url)
    controller = Controller.connect(endpoints.kafka_bootstrap, endpoints.redis_url, topic, config)
    record = ReplicaRecord(client, config.replica_namespace)
    try:
        epochs = {f"r{n}": controller.add_replica(f"r{n}") for n in range(replicas)}
        offset, times = 0, []
        for _ in range(checks):
            # What the consumer records of one round of heartbeats and the controller's tick.
            beats: list[Request] = [Heartbeat(r, e, now_ms()) for r, e in epochs.items()]
            beats.append(Heartbeat(CONTROLLER_ID, 1, now_ms()))
            record.record(topic, 0, list(enumerate(beats, offset)), now_ms())
            offset += len(beats)
            start = time.perf_counter()
            assert controller.check_leases() == []
            times.append((time.perf_counter() - start) * 1e3)
        return statistics.median(times)
    finally:
        controller.close()
        _drop_namespace(client, config.replica_namespace)
        client.close()
        admin.delete_topics([topic])


def parser() -> argparse.ArgumentParser:
    """The fleet shapes and the work done at each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--replicas", default="3,30,300")
    parser.add_argument("--collections", default="1,10,100")
    parser.add_argument("--updates", type=int, default=300_000, help="appended per point")
    parser.add_argument("--request-updates", type=int, default=500, help="updates per append")
    parser.add_argument("--group", type=int, default=50, help="requests per applied chunk")
    parser.add_argument("--checks", type=int, default=15, help="lease checks per point")
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every point of the three curves."""
    replicas = [int(n) for n in args.replicas.split(",")]
    collections = [int(n) for n in args.collections.split(",")]
    appends = args.updates // args.request_updates
    if appends < max(replicas) or appends < max(collections):
        raise SystemExit(
            f"--updates / --request-updates = {appends} appends: fewer than the largest fleet "
            f"({max(replicas)} replicas, {max(collections)} collections) leaves some idle"
        )
    with services() as endpoints:
        client = redis_client(endpoints.redis_url)
        return {
            "replicas": [
                {
                    "replicas": n,
                    **apply_point(client, 1, n, args),
                    "lease_check_ms": lease_check_ms(endpoints, n, args.checks),
                }
                for n in replicas
            ],
            "baseline_lease_check_ms": lease_check_ms(endpoints, 0, args.checks),
            "collections": [
                {"collections": n, **apply_point(client, n, COLLECTIONS_CURVE_REPLICAS, args)}
                for n in collections
            ],
        }


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    rows = [
        (f"{p['replicas']} replicas", p["updates_per_s"], p["baseline_updates_per_s"],
         p["lease_check_ms"], result["baseline_lease_check_ms"])
        for p in result["replicas"]
    ] + [
        (f"{p['collections']} collections", p["updates_per_s"], p["baseline_updates_per_s"],
         None, None)
        for p in result["collections"]
    ]  # fmt: skip
    columns = ["fleet", "updates/s", "HINCRBY updates/s (baseline)", "lease check ms",
               "check without replicas ms (baseline)"]  # fmt: skip
    report("fleet_scale", columns, rows, {"settings": vars(args)})


if __name__ == "__main__":
    main()
