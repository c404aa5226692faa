"""``collection-manager infra up|down|status``: local Kafka and Redis."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from collection_manager import infra
from collection_manager.commands import print_json, print_table
from collection_manager.config import InfraConfig, from_env


def register(commands: Any) -> None:
    """Adds the ``infra`` subcommand."""
    parser = commands.add_parser("infra", help="local Kafka and Redis: up, down, status")
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--format", choices=["table", "json"], default="table")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Runs ``infra up``, ``down`` or ``status``."""
    config = from_env(InfraConfig)
    if args.action == "up":
        endpoints = infra.up(config)
        print(f"kafka {endpoints.kafka_bootstrap}\nredis {endpoints.redis_url}")
        if endpoints.started:
            started = ", ".join(endpoints.started)
            print(f"started: {started} (stop with: collection-manager infra down)")
    elif args.action == "down":
        stopped = infra.down(config)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
    elif args.format == "json":
        print_json([dataclasses.asdict(row) for row in infra.status(config)])
    else:
        rows = [
            (r.name, r.source, r.address, r.pid, "yes" if r.answers else "no", r.log)
            for r in infra.status(config)
        ]
        print_table("services", ["service", "source", "address", "pid", "answers", "log"], rows)
    return 0
