"""Row TTL in Redis: expiry index entries per row under refreshes, and expiry throughput.

Two measurements on a real Redis, each with its baseline measured in the same run:

1. **Index entries per row.** ``--rows`` rows are appended with a TTL, then re-appended
   ``--rounds`` times with diff 0 (a refresh) and the TTL, the clock moving on
   ``--step-ms`` each round. After every round: the collection's rows, and the entries of
   its expiry index (``cm:{c}:expiries``, ZCARD) and of a BASELINE append-only index kept
   by this benchmark in a plain sorted set: one member per written row (the stored row
   and ``|round``,
   score its expiry), entries removed only once their own expiry passed, as an index
   without replacement holds them. Ours must stay at one entry per row
   (docs/concepts/ttl-and-expiration.md); the baseline grows to ``rounds + 1`` (while ``--ttl-ms``
   exceeds the run's clock).
   Also the index's memory (``MEMORY USAGE ... SAMPLES 0``) and each refresh's time.
2. **Expiry throughput.** At each of ``--sizes``, a collection of that many rows appended
   with a TTL, the clock moved to their expiry, and ``RedisStore.retract_due`` timed: it
   retracts them in ``cm_due`` calls of at most ``DUE_STEP_ROWS`` rows, each at its own
   time. The BASELINE retracts the same rows (appended again,
   with the same TTL) by an explicit ``Delete`` on ``replica_id`` (indexed) through
   ``apply_requests``, which runs in steps of ``DELETE_STEP_ROWS``. Both report rows
   retracted per second, the FCALLs and the time Redis spent in them (its commandstats:
   Redis-wide, so a consumer using the same Redis meanwhile adds its calls) and the
   time per call, during which Redis serves nobody else.
   Median of ``--repeats``.

The clock (``now_ms``) starts far in the future (as ``tests/integration/test_store_ttl.py``
does), so that a consumer's retraction timer on the same Redis, on the wall clock, never
finds the benchmark's rows due. Collections are named per run and dropped at the end.
Run: ``.venv/bin/python -m bench.row_ttl [--rows 10000] [--rounds 20] [--sizes 1000,10000,100000]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
import uuid
from collections.abc import Sequence
from typing import Any, cast

import redis
from rich.console import Console
from rich.table import Table

from bench.common import report, services
from bench.reader_load import function_delta, function_stats
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.store import DELETE_STEP_ROWS, RedisStore

# Far in the future (inside the numeric domain): no wall-clock timer ever reaches it.
EPOCH = 4_000_000_000_000_000
REPLICA = "victim"
ROWS_PER_APPEND = 5_000
ROW_SCHEMA = {
    "type": "record",
    "name": "row_ttl",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "operator_id", "type": "long"},
        {"name": "records", "type": "long"},
    ],
}


class _Collection:
    """A collection of one replica's rows ``(victim, i, 7 i)``, written at a given clock."""

    def __init__(self, store: RedisStore, name: str) -> None:
        self.store, self.name, self.offset = store, name, 0
        store.drop_collection(name)
        store.create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id",)))

    def append(self, rows: int, diff: int, now_ms: int, ttl_ms: int) -> dict[str, int]:
        """Rows ``0..rows-1`` with ``diff`` and ``ttl_ms``, applied at ``now_ms``."""
        requests = []
        for start in range(0, rows, ROWS_PER_APPEND):
            stop = min(rows, start + ROWS_PER_APPEND)
            updates = tuple(((REPLICA, i, i * 7), diff) for i in range(start, stop))
            self.offset += 1
            append = Append(self.name, REPLICA, 1, updates, produced_at=0, ttl_ms=ttl_ms)
            requests.append((self.offset, append))
        return self.store.apply_requests("bench", 0, requests, now_ms=now_ms)[self.name]

    def delete(self, now_ms: int) -> dict[str, int]:
        """Every row, by an indexed delete on ``replica_id``."""
        self.offset += 1
        request = Delete(self.name, eq("replica_id", REPLICA), reason="bench")
        return self.store.apply_requests("bench", 0, [(self.offset, request)], now_ms=now_ms)[
            self.name
        ]


def _memory(client: redis.Redis, key: str) -> int:
    """Bytes of ``key``, every element counted (``SAMPLES 0``)."""
    return int(client.memory_usage(key, samples=0) or 0)


def index_rounds(
    store: RedisStore, client: redis.Redis, args: argparse.Namespace, suffix: str
) -> list[dict[str, Any]]:
    """Entries of ours and of the append-only baseline after the first append and each round."""
    collection = _Collection(store, f"bench-row-ttl-index-{suffix}")
    expiries = CollectionKeys(collection.name).expiries
    baseline = f"bench:row-ttl:{suffix}:append-only-index"
    client.delete(baseline)
    samples, stored = [], cast(list[bytes], [])
    try:
        for round_ in range(args.rounds + 1):
            now = EPOCH + round_ * args.step_ms
            expiry = now + args.ttl_ms
            start = time.perf_counter()
            # The first round appends the rows (diff 1), every later one refreshes them.
            collection.append(args.rows, 1 if round_ == 0 else 0, now, args.ttl_ms)
            apply_ms = (time.perf_counter() - start) * 1e3
            if round_ == 0:  # the rows as stored (so both indexes hold the same bytes)
                stored = cast(list[bytes], client.zrange(expiries, 0, -1))
            with client.pipeline(transaction=False) as pipe:
                for first in range(0, len(stored), 10_000):
                    chunk = stored[first : first + 10_000]
                    pipe.zadd(baseline, {row + b"|%d" % round_: expiry for row in chunk})
                # Its cleanup: entries whose own expiry passed leave (none while the TTL
                # exceeds the run's clock); stale ones of refreshed rows stay until then.
                pipe.zremrangebyscore(baseline, "-inf", now)
                pipe.execute()
            rows, _ = store.size(collection.name)
            entries, first_expiry = store.ttl_summary(collection.name)
            baseline_entries = int(client.zcard(baseline))
            samples.append(
                {
                    "round": round_,
                    "rows": rows,
                    "entries": entries,
                    "baseline_entries": baseline_entries,
                    "entries_per_row": entries / rows if rows else 0.0,
                    "baseline_entries_per_row": baseline_entries / rows if rows else 0.0,
                    # Every row's entry was refreshed by this round: the earliest is its own.
                    "all_refreshed": first_expiry == expiry,
                    "index_bytes": _memory(client, expiries),
                    "baseline_bytes": _memory(client, baseline),
                    "apply_ms": apply_ms,
                }
            )
    finally:
        store.drop_collection(collection.name)
        client.delete(baseline)
    return samples


def _timed(client: redis.Redis, action: Any) -> tuple[dict[str, int], dict[str, Any]]:
    """Runs ``action``; its counters, wall ms, and Redis's FCALLs and ms meanwhile."""
    before = function_stats(client)
    start = time.perf_counter()
    counters = action()
    wall_ms = (time.perf_counter() - start) * 1e3
    stats = function_delta(before, function_stats(client))
    return counters, {"wall_ms": wall_ms, **stats}


def _retraction(
    client: redis.Redis, collection: _Collection, size: int, now: int, ttl_ms: int, expire: bool
) -> dict[str, Any]:
    """Appends ``size`` rows with a TTL at ``now`` (untimed), then retracts them, timed."""
    collection.append(size, 1, now, ttl_ms)
    if expire:
        counters, timing = _timed(
            client, lambda: collection.store.retract_due(collection.name, now + ttl_ms)
        )
        retracted = counters.get("expirations", 0)
    else:
        counters, timing = _timed(client, lambda: collection.delete(now + 1))
        retracted = counters.get("retractions", 0)
    left, _ = collection.store.size(collection.name)
    if retracted != size or left:
        raise AssertionError(f"retracted {retracted} of {size} rows, {left} left")
    return timing


def _summary(runs: Sequence[dict[str, Any]], size: int) -> dict[str, Any]:
    wall_ms = statistics.median(run["wall_ms"] for run in runs)
    calls = statistics.median_low(run["function_calls"] for run in runs)
    redis_ms = statistics.median(run["function_ms"] for run in runs)
    return {
        "wall_ms": wall_ms,
        "rows_per_s": size / wall_ms * 1e3 if wall_ms else None,
        "function_calls": calls,
        "function_ms": redis_ms,
        "ms_per_call": redis_ms / calls if calls else None,
    }


def expiry_sizes(
    store: RedisStore, client: redis.Redis, args: argparse.Namespace, suffix: str
) -> list[dict[str, Any]]:
    """Per size: the median expiry (one ``cm_due``) and indexed delete of every row."""
    results = []
    for size in (int(s) for s in args.sizes.split(",")):
        collection = _Collection(store, f"bench-row-ttl-due-{size}-{suffix}")
        try:
            expired, deleted = [], []
            for repeat in range(args.repeats):
                # Each retraction at a later clock than the last (times move forward).
                now = EPOCH + repeat * 4 * args.ttl_ms
                expired.append(_retraction(client, collection, size, now, args.ttl_ms, True))
                now += 2 * args.ttl_ms
                deleted.append(_retraction(client, collection, size, now, args.ttl_ms, False))
        finally:
            store.drop_collection(collection.name)
        results.append(
            {"rows": size, "expiry": _summary(expired, size), "delete": _summary(deleted, size)}
        )
    return results


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=10_000, help="rows refreshed each round")
    parser.add_argument("--rounds", type=int, default=20, help="refreshes of every row")
    parser.add_argument("--step-ms", type=int, default=1_000, help="clock move per round")
    parser.add_argument("--ttl-ms", type=int, default=60_000, help="the rows' time to live")
    parser.add_argument("--sizes", default="1000,10000,100000", help="rows expired at once")
    parser.add_argument("--repeats", type=int, default=3, help="expiries and deletes per size")
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Index entries per round (ours and baseline), and retraction rates per size."""
    suffix = uuid.uuid4().hex[:8]
    with services() as endpoints:
        client = redis.Redis.from_url(endpoints.redis_url)
        store = RedisStore(client, log_max_length=10_000)
        rounds = index_rounds(store, client, args, suffix)
        sizes = expiry_sizes(store, client, args, suffix)
    return {"rounds": rounds, "sizes": sizes, "delete_step_rows": DELETE_STEP_ROWS}


def _cell(value: float | None) -> str:
    if value is None:
        return "-"
    if isinstance(value, int):
        return f"{value:,}"
    return f"{value:,.3g}" if value < 100 else f"{value:,.0f}"


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    table = Table(title="row_ttl: retracting every row of a collection")
    columns = ["rows", "path", "wall ms", "rows/s", "FCALLs", "Redis ms", "Redis ms per call"]
    for column in columns:
        table.add_column(column)
    for size in result["sizes"]:
        for path, label in (("expiry", "expiry (one cm_due)"), ("delete", "Delete (baseline)")):
            s = size[path]
            cells = (s["wall_ms"], s["rows_per_s"], s["function_calls"], s["function_ms"])
            table.add_row(f"{size['rows']:,}", label, *map(_cell, cells), _cell(s["ms_per_call"]))
    Console().print(table)
    rows = [
        (
            r["round"],
            r["rows"],
            r["entries"],
            r["entries_per_row"],
            r["baseline_entries"],
            r["baseline_entries_per_row"],
            r["index_bytes"] / r["rows"] if r["rows"] else 0.0,
            r["baseline_bytes"] / r["rows"] if r["rows"] else 0.0,
            "yes" if r["all_refreshed"] else "NO",
            r["apply_ms"],
        )
        for r in result["rounds"]
    ]
    report(
        "row_ttl",
        [
            "round",
            "rows",
            "entries",
            "per row",
            "append-only entries (baseline)",
            "per row (baseline)",
            "bytes/row",
            "bytes/row (baseline)",
            "all refreshed",
            "apply ms",
        ],
        rows,
        # Not "rows": that key holds the table's rows in the JSON record.
        {"settings": vars(args), "sizes": result["sizes"], "rounds": result["rounds"]},
    )


if __name__ == "__main__":
    main()
