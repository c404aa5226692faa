"""Running the pipeline: ``consume`` (the Spark consumer) and ``demo``."""

from __future__ import annotations

import argparse
from typing import Any

from collection_manager import infra
from collection_manager.commands import print_table
from collection_manager.config import ConsumerConfig, InfraConfig, SparkConfig, from_env


def register(commands: Any) -> None:
    """Adds ``consume`` and ``demo``."""
    consume = commands.add_parser("consume", help="run the Spark consumer until SIGTERM")
    consume.add_argument("--master", help="Spark master (default CM_SPARK_MASTER or local[*])")
    consume.add_argument("--duration", type=float, help="stop after this many seconds")
    consume.set_defaults(run=run_consume)

    demo = commands.add_parser("demo", help="requests through Kafka and Spark into Redis")
    demo.add_argument("--steps", type=int, default=5, help="changes after the snapshot")
    demo.add_argument("--timeout", type=float, default=120.0)
    demo.set_defaults(run=run_demo)


def run_consume(args: argparse.Namespace) -> int:
    """Runs the consumer; exits 0 after a clean stop."""
    from spark_consumers.run import run_consumer

    spark_config = from_env(SparkConfig)
    if args.master:
        spark_config = SparkConfig(
            args.master, spark_config.spark_driver_memory, spark_config.spark_log_level
        )
    infra_config = from_env(InfraConfig)
    endpoints = infra.up(infra_config)
    try:
        run_consumer(from_env(ConsumerConfig), spark_config, infra_config, endpoints, args.duration)
    finally:
        infra.down(infra_config, endpoints.started)
    return 0


def run_demo(args: argparse.Namespace) -> int:
    """Runs the demonstration; exits 1 when Redis does not hold what the replica holds."""
    from spark_consumers.demo import run_demo as demo

    result = demo(timeout_s=args.timeout, steps=args.steps)
    rows = []
    for collection in sorted(result.expected):
        stored, expected = result.stored.get(collection), result.expected[collection]
        rows.append(
            (
                collection,
                sum(expected.values()),
                sum((stored or {}).values()),
                "yes" if stored == expected else "NO",
            )
        )
    print_table("Redis vs the replica", ["collection", "replica rows", "Redis rows", "equal"], rows)
    for collection in sorted(result.stored)[:1]:
        sample = sorted(result.stored[collection].items(), key=str)[:5]
        print_table(f"{collection}: first rows in Redis", ["row", "count"], sample)
    print(
        "verified: Redis holds exactly what the replica holds"
        if result.verified
        else "MISMATCH: Redis differs from the replica"
    )
    return 0 if result.verified else 1
