"""``collection-manager infra up|down|status``: local Kafka and Redis."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any

from collection_manager import infra
from collection_manager.commands import print_json, print_table
from collection_manager.config import InfraConfig, from_env, redact_url


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
        print(f"kafka {endpoints.kafka_bootstrap}\nredis {redact_url(endpoints.redis_url)}")
        if endpoints.started:
            started = ", ".join(endpoints.started)
            print(f"started: {started} (stop with: collection-manager infra down)")
        return 0
    if args.action == "down":
        stopped = infra.down(config)
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    # A configured URL may hold a password: never print it.
    statuses = [dataclasses.replace(r, address=redact_url(r.address)) for r in infra.status(config)]
    if args.format == "json":
        print_json([dataclasses.asdict(row) for row in statuses])
    else:
        rows = [
            (r.name, r.source, r.address, r.pid, "yes" if r.answers else "no", r.log)
            for r in statuses
        ]
        print_table("services", ["service", "source", "address", "pid", "answers", "log"], rows)
    return 0
