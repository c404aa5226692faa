"""``collection-manager status``: what the consumer did and where each collection stands."""

from __future__ import annotations

import argparse
import json
from typing import Any, cast

import redis

from collection_manager import infra
from collection_manager.commands import print_json, print_table
from collection_manager.config import InfraConfig, from_env
from collection_manager.storage.keys import CONSUMER
from collection_manager.storage.store import RedisStore

COUNTERS = (
    "requests",
    "updates",
    "retractions",
    "fused_appends",
    "invalid_retractions",
    "fenced_invalid_retractions",
)


def register(commands: Any) -> None:
    """Adds ``status``."""
    parser = commands.add_parser("status", help="consumer progress, lag and collection counters")
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(run=run)


def _consumer(url: str) -> dict[str, Any]:
    client = redis.Redis.from_url(url, decode_responses=True)
    raw = cast(dict[str, str], client.hgetall(CONSUMER))
    out: dict[str, Any] = {
        k: int(raw[k]) for k in ("batches", "dead_letters", "control_requests") if k in raw
    }
    out["progress"] = json.loads(raw["progress"]) if "progress" in raw else {}
    return out


def collection_rows(store: RedisStore) -> list[dict[str, Any]]:
    """Per collection: distinct rows, latest time and the apply counters."""
    rows = []
    for name in store.collections():
        count, time = store.size(name)
        stats = store.stats(name)
        rows.append(
            {
                "collection": name,
                "rows": count,
                "time": time,
                **{c: stats.get(c, 0) for c in COUNTERS},
            }
        )
    return rows


def run(args: argparse.Namespace) -> int:
    """Prints the consumer's progress and lag, and each collection's counters."""
    url = infra.up(from_env(InfraConfig)).redis_url
    store = RedisStore.connect(url)
    consumer = _consumer(url)
    collections = collection_rows(store)
    if args.format == "json":
        print_json({"consumer": consumer, "collections": collections})
        return 0
    progress = consumer["progress"]
    print_table(
        "consumer",
        ["batches", "dead letters", "control", "rows/s", "lag"],
        [
            (
                consumer.get("batches", 0),
                consumer.get("dead_letters", 0),
                consumer.get("control_requests", 0),
                round(progress.get("processed_rows_per_s") or 0),
                sum(progress.get("lag", {}).values()),
            )
        ],
    )
    lag = progress.get("lag", {})
    if lag:
        print_table("lag per partition", ["partition", "behind"], sorted(lag.items()))
    print_table(
        "collections",
        [
            "collection",
            "rows",
            "time",
            "requests",
            "updates",
            "retracted",
            "fused",
            "invalid",
            "fenced inv.",
        ],
        [tuple(row.values()) for row in collections],
    )
    return 0
