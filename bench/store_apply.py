"""Apply throughput of the store: appends with 50% cancelling diffs, vs naive baselines.

Each request carries 1,000 updates: 750 insert fresh rows and 250 retract rows the previous
request inserted, so half of all updates cancel within a group. The store
merges a group's appends, consolidates them (cancelled pairs are never written) and
applies the rest, with index, change log and watermark, in atomic function calls.

Baselines, measured in the same run on the same updates: one HINCRBY round trip per
update (naive), and one HINCRBY per update pipelined (no atomicity, index or log).
Run: ``.venv/bin/python -m bench.store_apply [--requests 200] [--group 50]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Iterator
from typing import Any

import redis

from bench.common import report, services
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import redis_client
from collection_manager.storage.store import RedisStore

UPDATES_PER_REQUEST = 1_000
ROW_SCHEMA = {
    "type": "record",
    "name": "arrangement_sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "operator_id", "type": "long"},
        {"name": "records", "type": "long"},
    ],
}
Row = tuple[str, int, int]


def requests(collection: str, count: int) -> Iterator[Append]:
    """Appends of 1,000 updates: 750 fresh rows, and retractions of 250 of the previous ones.

    Within a group each retraction cancels an insertion of the previous request, so half of
    all updates (250 insertions + 250 retractions per request) cancel out.
    """
    previous: list[Row] = []
    for k in range(count):
        fresh = [("r1", k * 750 + i, k) for i in range(750)]
        retracted = previous[:250] if previous else [("r1", -1 - i, 0) for i in range(250)]
        yield Append(
            collection,
            "r1",
            1,
            tuple([(row, 1) for row in fresh] + [(row, -1) for row in retracted]),
            produced_at=0,
        )
        previous = fresh


def store_rate(store: RedisStore, collection: str, count: int, group: int) -> float:
    """Updates per second through ``apply_requests``, ``group`` requests per call."""
    batch = list(enumerate(requests(collection, count)))
    start = time.perf_counter()
    for first in range(0, len(batch), group):
        store.apply_requests("bench", 0, batch[first : first + group])
    return count * UPDATES_PER_REQUEST / (time.perf_counter() - start)


def baseline_rate(client: redis.Redis, key: str, count: int, pipelined: bool) -> float:
    """Updates per second writing every update with its own HINCRBY."""
    updates = [(repr(row), diff) for r in requests("baseline", count) for row, diff in r.updates]
    start = time.perf_counter()
    if pipelined:
        for first in range(0, len(updates), 1_000):
            with client.pipeline(transaction=False) as pipe:
                for row, diff in updates[first : first + 1_000]:
                    pipe.hincrby(key, row, diff)
                pipe.execute()
    else:
        for row, diff in updates:
            client.hincrby(key, row, diff)
    return len(updates) / (time.perf_counter() - start)


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200, help="requests of 1,000 updates")
    parser.add_argument("--group", type=int, default=50, help="requests per apply call")
    parser.add_argument("--naive-requests", type=int, default=20)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measures the store and both baselines; returns their updates/s."""
    with services() as endpoints:
        client = redis_client(endpoints.redis_url)
        store = RedisStore(client, log_max_length=100_000)
        name = "bench-apply"
        store.drop_collection(name)
        store.create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id",)))
        ours = store_rate(store, name, args.requests, args.group)
        store.drop_collection(name)
        client.delete("bench-baseline")
        pipelined = baseline_rate(client, "bench-baseline", args.requests, pipelined=True)
        client.delete("bench-baseline")
        naive = baseline_rate(client, "bench-baseline", args.naive_requests, pipelined=False)
        client.delete("bench-baseline")
    return {
        "store_updates_per_s": ours,
        "pipelined_updates_per_s": pipelined,
        "naive_updates_per_s": naive,
        "updates_per_request": UPDATES_PER_REQUEST,
        "cancelling_fraction": 0.5,
    }


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    ours = result["store_updates_per_s"]
    pipelined, naive = result["pipelined_updates_per_s"], result["naive_updates_per_s"]
    report(
        "store_apply",
        ["path", "updates/s", "store / this"],
        [
            ("store: merged, consolidated, atomic script", ours, 1.0),
            ("baseline: HINCRBY per update, pipelined", pipelined, ours / pipelined),
            ("baseline: HINCRBY per update, naive", naive, ours / naive),
        ],
        {
            "requests": args.requests,
            "group": args.group,
            "updates_per_request": UPDATES_PER_REQUEST,
            "cancelling_fraction": 0.5,
        },
    )


if __name__ == "__main__":
    main()
