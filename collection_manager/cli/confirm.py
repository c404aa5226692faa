"""Asking before what cannot be undone: ``--yes``, ``--dry-run``, or a question."""

from __future__ import annotations

import argparse
import sys

from collection_manager.cli.faults import FAILED
from collection_manager.config.errors import UsageError


def add_confirmation(parser: argparse.ArgumentParser) -> None:
    """``--yes`` and ``--dry-run`` of a command that cannot be undone."""
    parser.add_argument(
        "--yes",
        action="store_true",
        help="do it without asking (default: ask on a terminal, refuse elsewhere)",
    )
    parser.add_argument(
        "--dry-run", action="store_true", help="say what it would do, and do nothing"
    )


def stop_before(args: argparse.Namespace, what: str) -> int | None:
    """None to go on with ``what`` (a phrase: "drop c: ..."), else the exit code to stop
    with: 0 after ``--dry-run`` printed it, 1 when the one asked said no."""
    if args.dry_run:
        print(f"would {what} (--dry-run: nothing done)")
        return 0
    return None if confirmed(args.yes, what) else FAILED


def confirmed(yes: bool, what: str) -> bool:
    """Whether to go on with ``what``: with ``--yes``, yes; else a terminal is asked, and
    without one it is refused (exit 2), saying how to go on."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"this would {what}; run it again with --yes to go on")
    answer = input(f"{what[0].upper()}{what[1:]}. Go on? [y/N] ")
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("nothing done")
    return False
