"""Asking before what cannot be undone: ``--yes``, ``--dry-run``, or a question."""

from __future__ import annotations

import argparse
import sys

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


def confirmed(yes: bool, what: str) -> bool:
    """Whether to go on with ``what`` (a phrase: "drop c: ..."): with ``--yes``, yes; else
    a terminal is asked, and without one it is refused (exit 2), saying how to go on."""
    if yes:
        return True
    if not sys.stdin.isatty():
        raise UsageError(f"this would {what}; run it again with --yes to go on")
    answer = input(f"{what[0].upper()}{what[1:]}. Go on? [y/N] ")
    if answer.strip().lower() in ("y", "yes"):
        return True
    print("nothing done")
    return False
