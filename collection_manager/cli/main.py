"""The ``collection-manager`` command line: one module per group of subcommands beside this one."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from collection_manager.cli import bench, collections, infra, pipeline, replicas, status
from collection_manager.core.errors import CollectionManagerError

SUBCOMMANDS = (infra, collections, pipeline, status, replicas, bench)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of every subcommand."""
    parser = argparse.ArgumentParser(prog="collection-manager", description=__doc__)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress")
    commands = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.register(commands)
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
