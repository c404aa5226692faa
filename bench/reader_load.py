"""The load of ``bench.reader_latency``: appends at full speed, and a replica's many rows.

``apply_at_full_speed`` runs in a process of its own (so that its Python work never takes
the GIL from the probing threads): it applies the requests of ``bench.store_apply`` (1,000
updates each, half of them cancelling within a group) through ``RedisStore.apply_requests``,
``group`` requests per call, back to back until told to stop. That is the Redis work the
Spark consumer does for the same requests (``spark_consumers/applier.py`` calls the same
method per partition and micro-batch), without Kafka and Spark in the way.
"""

from __future__ import annotations

import itertools
import time
from concurrent.futures import ThreadPoolExecutor
from multiprocessing.connection import Connection
from multiprocessing.synchronize import Event
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from bench.store_apply import ROW_SCHEMA, UPDATES_PER_REQUEST, requests
from collection_manager.config import ConsumerConfig, from_env
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore

SPEC_COLUMNS = ("replica_id",)
# Distinct requests cycled through by the loader: enough that a group's rows are not all
# fresh hash fields nor all old ones, few enough to build in a second.
LOAD_REQUESTS = 200
FILL_APPEND_ROWS = 2_000  # one append per merged group (MAX_GROUP_UPDATES)
FILL_APPENDS_PER_CALL = 20
FILL_THREADS = 2
CALL_TIMEOUT_S = 600  # bench all's timeout stops a benchmark that hangs


def store(url: str) -> RedisStore:
    """A store with the consumer's change-log length (``CM_LOG_MAX_LENGTH``).

    Its client waits as long as a call takes and never sends one again: redis-py 8 gives
    up on a reply after 5 s by default and retries, and the delete of a million rows is
    one function call that runs longer than that.
    """
    config = from_env(ConsumerConfig)
    client = redis.Redis.from_url(url, socket_timeout=CALL_TIMEOUT_S, retry=Retry(NoBackoff(), 0))
    return RedisStore(client, log_max_length=config.log_max_length)


def fresh_collection(target: RedisStore, name: str) -> None:
    """``name`` created empty, with an index on ``replica_id`` (the delete's column)."""
    target.drop_collection(name)
    target.create_collection(CollectionSpec(name, ROW_SCHEMA, SPEC_COLUMNS))


def apply_at_full_speed(
    url: str, collection: str, group: int, ready: Event, stop: Event, out: Connection
) -> None:
    """Applies appends back to back from ``ready`` until ``stop``; sends its counters to ``out``.

    The requests are built before ``ready`` so that only applying them is timed. Offsets
    keep growing across cycles, so no group is skipped as already applied.
    """
    target = store(url)
    fresh_collection(target, collection)
    pool = list(requests(collection, LOAD_REQUESTS))
    offsets = itertools.count()
    ready.set()
    start, applied, calls = time.perf_counter(), 0, 0
    while not stop.is_set():
        batch = [(next(offsets), pool[(applied + i) % LOAD_REQUESTS]) for i in range(group)]
        target.apply_requests("bench", 0, batch)
        applied, calls = applied + group, calls + 1
    elapsed = time.perf_counter() - start
    out.send(
        {
            "applied_updates_per_s": applied * UPDATES_PER_REQUEST / elapsed,
            "apply_calls": calls,
            "requests_per_call": group,
        }
    )
    target.drop_collection(collection)


def fill(target: RedisStore, collection: str, replica: str, rows: int) -> float:
    """Applies ``rows`` distinct rows of ``replica`` in big groups; returns the seconds taken.

    Two threads, each on a Kafka partition of its own (so each has its own watermark and
    offsets), share the blocks: one builds its requests while the other's call runs in
    Redis.
    """
    start = time.perf_counter()
    block = FILL_APPEND_ROWS * FILL_APPENDS_PER_CALL
    firsts = range(0, rows, block)

    def fill_share(partition: int) -> None:
        offset = target.applied_offset(collection, "bench", partition)
        for first in firsts[partition::FILL_THREADS]:
            appends = [
                Append(collection, replica, 1, _fill_updates(replica, at, rows), produced_at=0)
                for at in range(first, min(rows, first + block), FILL_APPEND_ROWS)
            ]
            target.apply_requests(
                "bench", partition, [(offset + 1 + i, a) for i, a in enumerate(appends)]
            )
            offset += len(appends)

    with ThreadPoolExecutor(FILL_THREADS) as pool:
        list(pool.map(fill_share, range(FILL_THREADS)))  # list(): a share's error is raised
    return time.perf_counter() - start


def _fill_updates(replica: str, first: int, rows: int) -> tuple[Any, ...]:
    return tuple(
        ((replica, op, op * 7), 1) for op in range(first, min(rows, first + FILL_APPEND_ROWS))
    )


def function_stats(client: redis.Redis) -> dict[str, Any]:
    """Redis's own count of FCALLs and the microseconds it spent in them, so far."""
    stats = client.info("commandstats").get("cmdstat_fcall", {})
    return {"calls": int(stats.get("calls", 0)), "usec": int(stats.get("usec", 0))}


def function_delta(before: dict[str, Any], after: dict[str, Any]) -> dict[str, Any]:
    """The FCALLs between two ``function_stats`` and the milliseconds Redis spent in them."""
    return {
        "function_calls": after["calls"] - before["calls"],
        "function_ms": (after["usec"] - before["usec"]) / 1e3,
    }


def delete_when_told(
    url: str, collection: str, replica: str, rows: int, ready: Event, go: Event, out: Connection
) -> None:
    """Loads ``rows`` rows of ``replica`` (unmeasured), sets ``ready``, and once ``go`` is
    set deletes them all with one indexed delete; sends what it did to ``out``.

    A process of its own, as the consumer is for a reader: the loading's garbage and the
    delete's Python work never pause the probers' threads.
    """
    target = store(url)
    fill_s = fill(target, collection, replica, rows)
    offset = target.applied_offset(collection, "bench", 0) + 1
    delete = Delete(collection, eq("replica_id", replica))
    ready.set()
    go.wait()
    start = time.perf_counter()
    counters = target.apply_requests("bench", 0, [(offset, delete)])[collection]
    delete_ms = (time.perf_counter() - start) * 1e3
    out.send({"fill_s": fill_s, "delete_ms": delete_ms, "rows_deleted": counters["retractions"]})


# Far in the future (as the TTL tests do), so that no retraction timer on the wall clock
# finds the expiring phase's rows due before the benchmark does.
TTL_EPOCH_MS = 4_000_000_000_000_000


def read_when_told(
    url: str, collection: str, replica: str, rows: int, ready: Event, go: Event, out: Connection
) -> None:
    """Loads ``rows`` rows of ``replica`` in a collection of their own (unmeasured), sets
    ``ready``, and once ``go`` is set reads the whole collection as ``query`` does (in
    bounded steps); sends the time."""
    target = store(url)
    fresh_collection(target, collection)
    fill_s = fill(target, collection, replica, rows)
    ready.set()
    go.wait()
    start = time.perf_counter()
    snapshot = target.stepped_snapshot(collection)
    read_ms = (time.perf_counter() - start) * 1e3
    out.send({"fill_s": fill_s, "read_ms": read_ms, "rows_read": len(snapshot.rows)})


def expire_when_told(
    url: str, collection: str, rows: int, ready: Event, go: Event, out: Connection
) -> None:
    """Loads ``rows`` rows with a TTL in a collection of their own, sets ``ready``, and once
    ``go`` is set retracts them all as the retraction timer does when their TTL ended."""
    target = store(url)
    fresh_collection(target, collection)
    start = time.perf_counter()
    for offset, first in enumerate(range(0, rows, FILL_APPEND_ROWS)):
        updates = tuple(
            (("ttl", op, op), 1) for op in range(first, min(rows, first + FILL_APPEND_ROWS))
        )
        append = Append(collection, "ttl", 1, updates, produced_at=0, ttl_ms=1)
        target.apply_requests("bench", 0, [(offset, append)], now_ms=TTL_EPOCH_MS)
    fill_s = time.perf_counter() - start
    ready.set()
    go.wait()
    start = time.perf_counter()
    counters = target.retract_due(collection, TTL_EPOCH_MS + 1)
    expire_ms = (time.perf_counter() - start) * 1e3
    target.drop_collection(collection)
    out.send({"fill_s": fill_s, "expire_ms": expire_ms, "rows_expired": counters["expirations"]})


def drop_when_told(
    url: str, collection: str, replica: str, rows: int, ready: Event, go: Event, out: Connection
) -> None:
    """Sets ``ready`` once ``collection`` holds ``rows`` rows (of ``replica``, loaded if the
    reading phase did not), and once ``go`` is set drops it; sends the time it took."""
    target = store(url)
    fill_s = 0.0
    if collection not in target.collections() or target.size(collection)[0] != rows:
        fresh_collection(target, collection)
        fill_s = fill(target, collection, replica, rows)
    ready.set()
    go.wait()
    start = time.perf_counter()
    target.drop_collection(collection)
    drop_ms = (time.perf_counter() - start) * 1e3
    out.send({"fill_s": fill_s, "drop_ms": drop_ms, "rows_dropped": rows})
