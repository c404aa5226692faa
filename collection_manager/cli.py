"""The ``collection-manager`` command line."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence

from collection_manager import infra
from collection_manager.config import InfraConfig, from_env
from collection_manager.errors import CollectionManagerError


def _print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    Console().print(table)


def _infra(args: argparse.Namespace) -> int:
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
    else:
        rows = infra.status(config)
        if args.format == "json":
            print(json.dumps([row.__dict__ for row in rows], indent=2))
        else:
            _print_table(
                "services",
                ["service", "source", "address", "pid", "answers", "log"],
                [
                    (r.name, r.source, r.address, r.pid, "yes" if r.answers else "no", r.log)
                    for r in rows
                ],
            )
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="collection-manager", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    commands = parser.add_subparsers(dest="command", required=True)

    infra_cmd = commands.add_parser("infra", help="local Kafka and Redis: up, down, status")
    infra_cmd.add_argument("action", choices=["up", "down", "status"])
    infra_cmd.add_argument("--format", choices=["table", "json"], default="table")
    infra_cmd.set_defaults(run=_infra)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the console script."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO if args.verbose else logging.WARNING,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    try:
        return int(args.run(args))
    except CollectionManagerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
