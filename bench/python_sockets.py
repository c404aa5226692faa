"""A job of Python tasks when Spark talks to its Python workers over TCP or Unix sockets.

The consumer's micro-batch is a job of ``mapInPandas`` tasks, one per core; what each
task costs beside its own work is mostly the JVM handing it to a reused Python worker and
taking its result back. This times ``--jobs`` collects of a ``mapInPandas`` that returns
its input, over ``--partitions`` partitions on ``local[2]``: once with the sockets the
consumer uses (``spark.python.unix.domain.socket.enabled``, ``spark_consumers/session.py``),
once with TCP on loopback (the baseline: Spark's default), each in a Spark session of its
own process, in the same run. A plain collect of the same rows, with no Python task, is
printed too: the floor of any job.
Run: ``.venv/bin/python -m bench.python_sockets [--jobs 20] [--partitions 4]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bench.common import report

WARM_UP = 3  # jobs left out: the first ones start the Python workers


def median_job_ms(collect: Callable[[], object], jobs: int) -> float:
    """The median milliseconds of ``jobs`` calls of ``collect``, after the warm-up."""
    times = []
    for _ in range(WARM_UP + jobs):
        start = time.perf_counter()
        collect()
        times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times[WARM_UP:])


def one_session(unix_sockets: bool, jobs: int, partitions: int) -> dict[str, float]:
    """Both jobs' medians in a session of this process, its sockets as asked."""
    from bench.e2e_paths import bench_session
    from spark_consumers import session

    if not unix_sockets:
        session.unix_sockets_fit = lambda folder: False  # Spark's default, TCP

    def identity(frames: Iterator[Any]) -> Iterator[Any]:  # nested: pickled by value,
        yield from frames  # as the workers cannot import bench

    spark = bench_session("local[2]", "bench-python-sockets")
    try:
        rows = spark.range(0, 40 * partitions, 1, partitions).selectExpr("id % 7 as v")
        mapped = rows.mapInPandas(identity, "v long")
        return {
            "python_ms": median_job_ms(mapped.collect, jobs),
            "plain_ms": median_job_ms(rows.collect, jobs),
        }
    finally:
        spark.stop()


def in_own_process(unix_sockets: bool, args: argparse.Namespace) -> dict[str, float]:
    """``one_session`` in a fresh interpreter (a session's sockets are fixed at its start)."""
    code = (
        "import json, sys; from bench.python_sockets import one_session; "
        "print(json.dumps(one_session(sys.argv[1] == 'unix', int(sys.argv[2]), "
        "int(sys.argv[3]))))"
    )
    mode = "unix" if unix_sockets else "tcp"
    out = subprocess.run(
        [sys.executable, "-c", code, mode, str(args.jobs), str(args.partitions)],
        cwd=Path(__file__).resolve().parents[1],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return result


def parser() -> argparse.ArgumentParser:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--jobs", type=int, default=20, help="jobs timed per session")
    parser.add_argument("--partitions", type=int, default=4, help="tasks per job")
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Both sessions, the baseline first; reports and returns their medians."""
    tcp = in_own_process(False, args)
    unix = in_own_process(True, args)
    report(
        "python_sockets",
        ["JVM to Python workers", "mapInPandas job ms", "plain collect ms", "this / TCP"],
        [
            ("Unix sockets (ours)", *_cells(unix), unix["python_ms"] / tcp["python_ms"]),
            ("TCP on loopback (baseline)", *_cells(tcp), 1.0),
        ],
        {"jobs": args.jobs, "partitions": args.partitions},
    )
    return {"unix": unix, "tcp": tcp}


def _cells(figures: dict[str, float]) -> tuple[float, float]:
    return figures["python_ms"], figures["plain_ms"]


def main() -> None:
    run(parser().parse_args())


if __name__ == "__main__":
    main()
