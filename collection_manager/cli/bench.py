"""``collection-manager bench run``: every benchmark, then ``docs/benchmarks.md`` and plots.

The benchmarks live in the source checkout's ``bench/`` package, which is not installed:
this runs ``python -m bench.all`` there, in a process of its own (which runs each
benchmark in a process of its own again).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from pathlib import Path
from typing import Any

import collection_manager
from collection_manager.core.errors import CollectionManagerError


def register(commands: Any) -> None:
    """Adds ``bench run``."""
    bench = commands.add_parser("bench", help="run the benchmarks and write their report")
    which = bench.add_subparsers(dest="bench_command", required=True)
    every = which.add_parser(
        "run", help="every benchmark (about 35 minutes on 2 cores), then docs/benchmarks.md"
    )
    every.add_argument("--quick", action="store_true", help="tiny scale: a smoke run")
    every.add_argument(
        "--out", type=Path, help="directory of benchmarks.md and benchmarks/*.png (default docs/)"
    )
    every.add_argument("--only", help="comma-separated benchmarks to run (default: all)")
    every.add_argument(
        "--results", type=Path, help="where the results JSON goes (default: bench/results/all.json)"
    )
    every.add_argument(
        "--from-results",
        type=Path,
        help="render a saved results file only (default: run the benchmarks)",
    )
    every.set_defaults(run=run_all)


def source_root() -> Path:
    """The checkout that holds ``bench/`` beside ``collection_manager/``."""
    root = Path(collection_manager.__file__).resolve().parents[1]
    if not (root / "bench" / "all.py").is_file():
        raise CollectionManagerError(
            f"the benchmarks need a source checkout; {root / 'bench'} has none"
        )
    return root


def run_all(args: argparse.Namespace) -> int:
    """Runs ``python -m bench.all`` in the checkout; returns its exit status."""
    command = [sys.executable, "-m", "bench.all"]
    if args.quick:
        command.append("--quick")
    if args.only:
        command += ["--only", args.only]
    for option, path in (
        ("--out", args.out),
        ("--results", args.results),
        ("--from-results", args.from_results),
    ):
        if path is not None:
            command += [option, str(path.resolve())]  # relative to where the user is
    return subprocess.call(command, cwd=source_root())
