"""Stored future retractions with and without an expiration (seeds 000/002).

Appends rows with a ``valid_until`` of 20 or 30 days and counts the retractions the store
keeps scheduled under no expiration (the baseline: all of them) and offsets of 20 and 30
days, as Materialize's replica-expiration test counts arrangement records. The rows and
their ledger are stored either way; only the schedule of ready retractions shrinks.
Run: ``.venv/bin/python -m bench.expiration [--rows 100000]``.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import redis

from bench.common import report, services
from collection_manager.core.requests import Append
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_spec

DAY_MS = 86_400_000
CASES = ((20, None), (20, 30), (30, 20), (30, None))


def scheduled(store: RedisStore, rows: int, validity_days: int, offset_days: int | None) -> int:
    """Retractions scheduled after appending ``rows`` rows valid for ``validity_days``."""
    name = f"bench-expiration-{validity_days}-{offset_days}"
    spec = introspection_spec("error_counts")
    store.drop_collection(name)
    store.create_collection(type(spec)(name, spec.row_schema, spec.indexed_columns))
    now = int(time.time() * 1000)
    store.set_expiration(name, None if offset_days is None else now + offset_days * DAY_MS)
    valid_until = now + validity_days * DAY_MS
    for offset, start in enumerate(range(0, rows, 5_000)):
        updates = tuple(
            (("r1", f"export-{i}", i), 1) for i in range(start, min(rows, start + 5_000))
        )
        request = Append(name, "r1", 1, updates, produced_at=now, valid_until=valid_until)
        store.apply_requests("bench", 0, [(offset, request)])
    kept = store.scheduled(name)
    store.drop_collection(name)
    return kept


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Scheduled retractions per (validity, offset) case; offset None is the baseline."""
    with services() as endpoints:
        store = RedisStore(redis.Redis.from_url(endpoints.redis_url), log_max_length=10_000)
        kept = {case: scheduled(store, args.rows, *case) for case in CASES}
    return {
        "cases": [
            {"validity_days": validity, "offset_days": offset, "scheduled": count}
            for (validity, offset), count in kept.items()
        ]
    }


def main() -> None:
    args = parser().parse_args()
    cases = run(args)["cases"]
    baselines = {c["validity_days"]: c["scheduled"] for c in cases if c["offset_days"] is None}
    rows = []
    for case in cases:
        validity, offset, count = case["validity_days"], case["offset_days"], case["scheduled"]
        baseline = baselines[validity]
        rows.append(
            (
                f"{validity} days",
                "none" if offset is None else f"{offset} days",
                count,
                baseline,
                count / baseline,
            )
        )
    report(
        "expiration",
        [
            "validity",
            "expiration offset",
            "scheduled retractions",
            "without expiration (baseline)",
            "ratio",
        ],
        rows,
        # Not "rows": that key holds the table's rows in the JSON record.
        {"appended_rows": args.rows},
    )


if __name__ == "__main__":
    main()
