"""The command line of a generated reference page: print it, write it, or check a file.

The settings, metric and command references are pages rendered from the code; each
module's ``main`` is this, given how to render its page and how to regenerate it.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path


def page_command(
    argv: Sequence[str] | None,
    *,
    prog: str,
    description: str,
    render: Callable[[], str],
    regenerate: str,
) -> int:
    """Prints the page, writes it to ``--write FILE``, or exits 1 when ``--check FILE`` is
    not the page (naming the command that regenerates it)."""
    parser = argparse.ArgumentParser(prog=prog, description=description)
    action = parser.add_mutually_exclusive_group()
    action.add_argument("--write", type=Path, metavar="FILE", help="write the page to FILE")
    action.add_argument("--check", type=Path, metavar="FILE", help="exit 1 if FILE differs")
    args = parser.parse_args(argv)
    page = render()
    try:
        if args.write is not None:
            args.write.write_text(page)
        elif args.check is not None and args.check.read_text() != page:
            sys.stderr.write(f"{args.check} is out of date; run {regenerate}\n")
            return 1
        elif args.check is None:
            sys.stdout.write(page)
    except OSError as exc:
        sys.stderr.write(f"error: {exc}\n")
        return 1
    return 0
