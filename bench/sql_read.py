"""Reads through the Spark SQL data source, beside the CLI's read and beside no pushdown.

One collection of ``--rows`` rows (replicas of ``--replica-rows`` rows each, index on
``replica_id``) is read:

- whole through the data source (``spark.read.format("collections")``, every row brought
  into Spark and summed there), beside ``query``'s full read of the same rows in this
  process (``RedisStore.snapshot``: one HGETALL, decoded), the baseline;
- whole again in two parts (``partitions`` 2, each a scan keeping half the rows), beside
  the read in one part;
- for one replica (``WHERE replica_id = ...``) with the filter pushed down to the index,
  beside the same query with ``pushdown`` off (Spark reads every row and filters).

Each is the median of ``--repeats``; the rows each read gave are checked against the
baseline's, so a fast wrong answer cannot pass. Run:
``.venv/bin/python -m bench.sql_read [--rows 1000000] [--repeats 3]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import redis

from bench.common import report, services
from collection_manager.config import InfraConfig, SparkConfig, from_env
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.sql import SNAPSHOT_FORMAT, register
from collection_manager.storage.store import RedisStore

COLLECTION = "bench-sql-read"
ROW_SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "operator_id", "type": "long"},
        {"name": "size", "type": "long"},
    ],
}
ROWS_PER_CALL = 20_000


def load(store: RedisStore, rows: int, replica_rows: int) -> None:
    """The collection, ``rows`` rows, applied as the consumer applies them."""
    store.drop_collection(COLLECTION)
    store.create_collection(CollectionSpec(COLLECTION, ROW_SCHEMA, ("replica_id",)))
    for offset, start in enumerate(range(0, rows, ROWS_PER_CALL)):
        updates = tuple(
            ((f"r{i // replica_rows}", i % replica_rows, i), 1)
            for i in range(start, min(rows, start + ROWS_PER_CALL))
        )
        store.apply_requests("bench", 0, [(offset, Append(COLLECTION, "bench", 1, updates, 0))])


def timed(repeats: int, read: Callable[[], int], expected: int) -> float:
    """The median seconds of ``repeats`` reads, each checked to return ``expected`` rows."""
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        got = read()
        times.append(time.perf_counter() - start)
        if got != expected:
            raise AssertionError(f"a read returned {got} rows, not {expected}")
    return statistics.median(times)


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--replica-rows", type=int, default=1_000)
    parser.add_argument("--repeats", type=int, default=3)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Seconds of each read (median), and the rows per second of the full reads."""
    from spark_consumers.session import build_spark_session

    with services() as endpoints:
        store = RedisStore(redis.Redis.from_url(endpoints.redis_url), log_max_length=10_000)
        load(store, args.rows, args.replica_rows)
        spark = build_spark_session(from_env(SparkConfig), from_env(InfraConfig), "bench-sql")
        register(spark)

        def frame(pushdown: bool = True, parts: int = 1) -> Any:
            reader = spark.read.format(SNAPSHOT_FORMAT).option("redis.url", endpoints.redis_url)
            reader = reader.option("partitions", str(parts))
            return reader.option("pushdown", str(pushdown).lower()).load(COLLECTION)

        def whole(parts: int) -> int:
            return int(frame(parts=parts).selectExpr("count(*) AS n", "sum(size)").first()["n"])

        def one_replica(pushdown: bool) -> int:
            return len(frame(pushdown).where("replica_id = 'r1'").collect())

        try:
            query_s = timed(args.repeats, lambda: len(store.snapshot(COLLECTION).rows), args.rows)
            whole(1)  # the first Spark job of a session pays for starting its workers
            source_s = timed(args.repeats, lambda: whole(1), args.rows)
            two_parts_s = timed(args.repeats, lambda: whole(2), args.rows)
            pushed_s = timed(args.repeats, lambda: one_replica(True), args.replica_rows)
            unpushed_s = timed(args.repeats, lambda: one_replica(False), args.replica_rows)
        finally:
            spark.stop()
            store.drop_collection(COLLECTION)
    return {
        "rows": args.rows,
        "replica_rows": args.replica_rows,
        "query_full_s": query_s,
        "source_full_s": source_s,
        "source_two_parts_s": two_parts_s,
        "pushed_s": pushed_s,
        "unpushed_s": unpushed_s,
    }


def main() -> None:
    args = parser().parse_args()
    figures = run(args)
    rows = [
        (
            "full read, data source",
            figures["source_full_s"],
            "query's full read",
            figures["query_full_s"],
        ),
        (
            "full read, data source, 2 parts",
            figures["source_two_parts_s"],
            "1 part",
            figures["source_full_s"],
        ),
        ("one replica, pushed down", figures["pushed_s"], "not pushed down", figures["unpushed_s"]),
    ]
    report(
        "sql_read",
        ["read", "seconds (median)", "baseline", "baseline seconds"],
        [(name, s, base, b) for name, s, base, b in rows],
        figures,
    )


if __name__ == "__main__":
    main()
