"""Deleting one replica's 1,000 rows from collections of growing size: index vs scan.

The indexed delete should take the same time whatever the collection's size; the scan
grows with it. Run: ``.venv/bin/python -m bench.store_delete [--sizes 10000,100000,1000000]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Any

from redis.backoff import NoBackoff
from redis.retry import Retry

from bench.common import report, services
from bench.reader_load import CALL_TIMEOUT_S
from collection_manager.core.filters import eq, prefix
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.storage.client import redis_client
from collection_manager.storage.store import RedisStore

VICTIM_ROWS = 1_000
ROW_SCHEMA = {
    "type": "record",
    "name": "arrangements",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "operator_id", "type": "long"},
        {"name": "records", "type": "long"},
    ],
}


def _rows(replica: str, count: int) -> list[tuple[Row, int]]:
    return [((replica, op, op * 7), 1) for op in range(count)]


class _Collection:
    """A collection of ``size`` rows, 1,000 of them from replica ``victim``."""

    def __init__(self, store: RedisStore, size: int) -> None:
        self.store, self.name, self.offset = store, f"bench-delete-{size}", 0
        store.drop_collection(self.name)
        store.create_collection(CollectionSpec(self.name, ROW_SCHEMA, ("replica_id",)))
        others = size - VICTIM_ROWS
        for start in range(0, others, 10_000):
            replica = f"r{start // 10_000}"
            self._apply(self._append(replica, min(10_000, others - start)))
        self.refill()

    def _append(self, replica: str, rows: int) -> Append:
        return Append(self.name, replica, 1, tuple(_rows(replica, rows)), produced_at=0)

    def _apply(self, request: Append | Delete) -> dict[str, int]:
        self.offset += 1
        return self.store.apply_requests("bench", 0, [(self.offset, request)])[self.name]

    def refill(self) -> None:
        self._apply(self._append("victim", VICTIM_ROWS))

    def delete(self, indexed: bool) -> None:
        # Both filters select exactly the victim's rows; only eq on replica_id has an index.
        where = eq("replica_id", "victim") if indexed else prefix("replica_id", "victim")
        assert self._apply(Delete(self.name, where))["retractions"] == VICTIM_ROWS


def _delete_ms(collection: _Collection, indexed: bool, repeats: int) -> float:
    """Median time of the delete alone; the rows are put back between repeats."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        collection.delete(indexed)
        times.append(time.perf_counter() - start)
        collection.refill()
    return statistics.median(times) * 1e3


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--scan-max",
        type=int,
        default=None,
        help="measure the scan baseline only up to this many rows (it grows with the size)",
    )
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Median indexed and scan delete times per collection size (scan None when skipped)."""
    sizes = []
    with services() as endpoints:
        # Dropping a million rows is one function call of several seconds: wait for it,
        # never send it again (redis-py's default gives up after 5 s and retries).
        client = redis_client(
            endpoints.redis_url, socket_timeout=CALL_TIMEOUT_S, retry=Retry(NoBackoff(), 0)
        )
        store = RedisStore(client, log_max_length=10_000)
        for size in (int(s) for s in args.sizes.split(",")):
            start = time.perf_counter()
            collection = _Collection(store, size)
            build_s = time.perf_counter() - start
            indexed = _delete_ms(collection, True, args.repeats)
            scanned = args.scan_max is None or size <= args.scan_max
            scan = _delete_ms(collection, False, args.repeats) if scanned else None
            store.drop_collection(collection.name)
            sizes.append({"rows": size, "indexed_ms": indexed, "scan_ms": scan, "build_s": build_s})
    return {"sizes": sizes, "rows_deleted": VICTIM_ROWS}


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    rows = [
        (s["rows"], s["indexed_ms"], s["scan_ms"], s["scan_ms"] and s["scan_ms"] / s["indexed_ms"])
        for s in result["sizes"]
    ]
    report(
        "store_delete",
        ["collection rows", "indexed delete ms", "scan delete ms (baseline)", "scan / indexed"],
        rows,
        {"rows_deleted": VICTIM_ROWS, "repeats": args.repeats},
    )


if __name__ == "__main__":
    main()
