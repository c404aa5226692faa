"""Reads and memory as a collection grows, against a plain Redis hash of the same rows.

One collection grows through ``--sizes`` (rows of replicas with 1,000 rows each, applied
by the store as the consumer applies them, index on ``replica_id``); beside it a plain
hash holds the same encoded rows (``HSET row 1``), the least a Redis copy of the rows
can be. At each size:

- point query: the row of one replica and operator, read as a reader reads it
  (``snapshot`` with ``replica_id = r AND operator_id = o``: the index, then the filter
  over that replica's rows), p50 and p99 of ``--queries``; baseline ``HGET`` of the row
  on the plain hash;
- full read: ``snapshot`` of the whole collection, decoded (median of ``--repeats``, fewer
  at sizes whose reads pass ``--read-budget-s``);
  baseline ``HGETALL`` of the plain hash, decoded the same way;
- memory per row: growth of Redis's ``used_memory`` while the rows were added, over the
  rows; the collection's includes its index and its change log (which keeps every row
  until ``log_max_length`` entries), whose share is given on its own.

Run: ``.venv/bin/python -m bench.row_scale [--sizes 10000,100000,1000000,10000000]``
(ten million rows take about 3 GB of Redis memory and 5 GB in this process).
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import Any, cast
from urllib.parse import urlsplit

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from bench.common import report, services
from bench.reader_load import CALL_TIMEOUT_S
from bench.store_apply import ROW_SCHEMA
from collection_manager.config import ConsumerConfig, from_env
from collection_manager.core.filters import and_, eq
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.rows import decode_counted, encode_row
from collection_manager.storage.store import RedisStore

COLLECTION = "bench-row-scale"
PLAIN = "bench-row-scale-plain"
REPLICA_ROWS = 1_000  # rows per replica: what one indexed read of a replica returns
APPENDS_PER_CALL = 20
ROWS_PER_CALL = REPLICA_ROWS * APPENDS_PER_CALL
LANES = 2  # threads growing the collection (one partition each) and the plain hash
PLAIN_CHUNK = 10_000  # rows per pipeline round trip
PLAIN_FIELDS = 1_000  # rows per HSET


def _row(i: int) -> Row:
    return (f"r{i // REPLICA_ROWS}", i % REPLICA_ROWS, i * 7)


class _Growing:
    """The collection and the plain hash, grown together to each size in turn."""

    def __init__(self, url: str, db: int) -> None:
        # A long reply timeout and no retry: the full read of a million rows takes seconds,
        # and an apply sent again would be skipped as applied, not timed (bench all's
        # timeout stops a benchmark that hangs).
        self.client = redis.Redis.from_url(
            urlsplit(url)._replace(path=f"/{db}").geturl(),
            socket_timeout=CALL_TIMEOUT_S,
            retry=Retry(NoBackoff(), 0),
        )
        # A database of its own, emptied at the end at once (FLUSHDB): dropping ten
        # million rows through the store is a function call of a minute that blocks Redis.
        if keys := self.client.dbsize():
            raise SystemExit(
                f"row_scale grows its rows in Redis database {db} and empties it after, "
                f"but it holds {keys} keys: choose an empty one with --db"
            )
        # The consumer's change-log length: the log is part of what a collection costs.
        self.store = RedisStore(self.client, from_env(ConsumerConfig).log_max_length)
        self.rows = self.store_bytes = self.plain_bytes = 0
        self.offsets = [0] * LANES  # the last offset applied in each lane's partition
        self.store.create_collection(CollectionSpec(COLLECTION, ROW_SCHEMA, ("replica_id",)))

    def grow_to(self, size: int) -> float:
        """Adds rows up to ``size`` to both; returns the seconds the store took."""
        used = self._used_memory()
        start = time.perf_counter()
        _in_lanes(partial(self._apply, size), range(self.rows, size, ROWS_PER_CALL))
        load_s = time.perf_counter() - start
        self.store_bytes += self._used_memory() - used
        used = self._used_memory()
        _in_lanes(partial(self._fill_plain, size), range(self.rows, size, PLAIN_CHUNK))
        self.plain_bytes += self._used_memory() - used
        self.rows = size
        return load_s

    def _fill_plain(self, size: int, _lane: int, chunks: Sequence[int]) -> None:
        """Adds the rows of ``chunks`` (first rows) to the plain hash."""
        for first in chunks:
            with self.client.pipeline(transaction=False) as pipe:
                for field in range(first, min(size, first + PLAIN_CHUNK), PLAIN_FIELDS):
                    last = min(size, field + PLAIN_FIELDS)
                    pipe.hset(PLAIN, mapping={encode_row(_row(i)): 1 for i in range(field, last)})
                pipe.execute()

    def _apply(self, size: int, partition: int, calls: Sequence[int]) -> None:
        """Applies, in one partition, the calls whose first rows are ``calls``."""
        for first in calls:
            last = min(size, first + ROWS_PER_CALL)
            appends = [
                Append(COLLECTION, f"r{at // REPLICA_ROWS}", 1, _updates(at, size), 0)
                for at in range(first, last, REPLICA_ROWS)
            ]
            offset = self.offsets[partition]
            offsets = range(offset + 1, offset + 1 + len(appends))
            requests = list(zip(offsets, appends, strict=True))
            # validated: the rows are made to fit (the consumer too checks rows before this).
            self.store.apply_requests("bench", partition, requests, validated=True)
            self.offsets[partition] += len(appends)

    def _used_memory(self) -> int:
        # Includes the functions' Lua heap, whose garbage (up to about a megabyte between
        # collections) blurs the figure at a few thousand rows, not from ten thousand on.
        return int(self.client.info("memory")["used_memory"])

    def log_bytes(self) -> int:
        usage = self.client.memory_usage(CollectionKeys(COLLECTION).log, samples=0)
        return int(usage or 0)

    def drop(self) -> None:
        """Empties the database: a few seconds at ten million rows (synchronously, so the
        next benchmark does not share the machine with Redis freeing gigabytes)."""
        self.client.flushdb()


def _in_lanes(work: Callable[[int, Sequence[int]], None], starts: range) -> None:
    """``work(lane, starts[lane::LANES])`` for each lane, in a thread each: the Python side
    of one lane overlaps Redis's side of the other. Lanes write disjoint rows, so their
    order does not matter."""
    with ThreadPoolExecutor(LANES) as pool:
        for _ in pool.map(work, range(LANES), [starts[lane::LANES] for lane in range(LANES)]):
            pass  # each result is None; iterating raises what a lane raised


def _updates(first: int, size: int) -> tuple[tuple[Row, int], ...]:
    last = min(size, first - first % REPLICA_ROWS + REPLICA_ROWS)
    return tuple((_row(i), 1) for i in range(first, last))


def _timed_ms(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return (time.perf_counter() - start) * 1e3


def _percentiles(times: list[float]) -> dict[str, float]:
    cuts = statistics.quantiles(times, n=100, method="inclusive")
    return {"p50_ms": cuts[49], "p99_ms": cuts[98]}


def point_queries(grown: _Growing, queries: int, seed: int) -> dict[str, dict[str, float]]:
    """p50 and p99 of the collection's point query and of ``HGET`` on the plain hash."""
    rng = random.Random(seed)
    picks = [_row(rng.randrange(grown.rows)) for _ in range(queries)]

    def ours(row: Row) -> None:
        where = and_(eq("replica_id", row[0]), eq("operator_id", row[1]))
        assert grown.store.snapshot(COLLECTION, where).rows == {row: 1}

    def plain(row: Row) -> None:
        assert grown.client.hget(PLAIN, encode_row(row)) == b"1"

    return {
        "ours": _percentiles([_timed_ms(partial(ours, row)) for row in picks]),
        "plain": _percentiles([_timed_ms(partial(plain, row)) for row in picks]),
    }


def full_reads(grown: _Growing, repeats: int, budget_s: float) -> dict[str, float]:
    """Median ms of reading (and decoding) every row: the collection's snapshot, the hash.

    Each is read ``repeats`` times, or fewer once this size's reads took ``budget_s``
    (at least once): at ten million rows one read of each takes most of a minute.
    """

    def ours() -> None:
        assert len(grown.store.snapshot(COLLECTION).rows) == grown.rows

    def plain() -> None:
        contents = cast(dict[bytes, bytes], grown.client.hgetall(PLAIN))
        assert len(decode_counted(list(contents), contents.values())) == grown.rows

    times: dict[str, list[float]] = {"ours_ms": [], "plain_ms": []}
    start = time.perf_counter()
    while len(times["ours_ms"]) < repeats:
        times["ours_ms"].append(_timed_ms(ours))
        times["plain_ms"].append(_timed_ms(plain))
        if time.perf_counter() - start > budget_s:
            break
    return {name: statistics.median(ms) for name, ms in times.items()} | {
        "reads": len(times["ours_ms"])
    }


def parser() -> argparse.ArgumentParser:
    """The sizes and how many reads are timed at each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", default="10000,100000,1000000,10000000", help="rows, ascending")
    parser.add_argument("--queries", type=int, default=300, help="point queries per size")
    parser.add_argument("--repeats", type=int, default=3, help="full reads per size, at most")
    parser.add_argument(
        "--read-budget-s",
        type=float,
        default=20.0,
        help="no further full read at a size once its reads took this long",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--db", type=int, default=1, help="an empty Redis database, emptied again at the end"
    )
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The figures of every size, smallest first."""
    sizes = [int(s) for s in args.sizes.split(",")]
    if sizes != sorted(set(sizes)) or any(size % REPLICA_ROWS for size in sizes) or not sizes[0]:
        raise SystemExit(
            f"--sizes must ascend, in whole replicas of {REPLICA_ROWS} rows: {args.sizes}"
        )
    results = []
    with services() as endpoints:
        grown = _Growing(endpoints.redis_url, args.db)
        try:
            for previous, size in zip([0, *sizes], sizes, strict=False):
                load_s = grown.grow_to(size)
                results.append(
                    {
                        "rows": size,
                        "load_rows_per_s": (size - previous) / load_s,
                        "point": point_queries(grown, args.queries, args.seed),
                        "full": full_reads(grown, args.repeats, args.read_budget_s),
                        "bytes_per_row": grown.store_bytes / size,
                        "plain_bytes_per_row": grown.plain_bytes / size,
                        "log_bytes_per_row": grown.log_bytes() / size,
                    }
                )
        finally:
            grown.drop()
    return {"sizes": results, "replica_rows": REPLICA_ROWS}


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    rows = [
        (s["rows"], s["point"]["ours"]["p50_ms"], s["point"]["plain"]["p50_ms"],
         s["point"]["ours"]["p99_ms"], s["full"]["ours_ms"], s["full"]["plain_ms"],
         s["bytes_per_row"], s["plain_bytes_per_row"], s["log_bytes_per_row"])
        for s in result["sizes"]
    ]  # fmt: skip
    columns = ["rows", "point p50 ms", "HGET p50 ms (baseline)", "point p99 ms",
               "full read ms", "HGETALL ms (baseline)", "bytes/row", "hash bytes/row (baseline)",
               "of which log bytes/row"]  # fmt: skip
    report("row_scale", columns, rows, {"settings": vars(args)})


if __name__ == "__main__":
    main()
