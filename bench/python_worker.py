"""PySpark's per-task set-up of a reused Python worker, with and without our tuning.

Runs, in a fresh interpreter with the PYTHONPATH Spark gives its workers (``pyspark.zip``,
py4j's zip, the spark-core jar) and the consumer's modules imported, what PySpark's worker
does around every task: ``importlib.invalidate_caches()`` before it and ``gc.collect()``
after it. The baseline is that as it is; ours calls
:func:`spark_consumers.python_worker.cheapen_next_task` first, as the applier does at the
start of every task. Both in the same run, each in its own interpreter.
Run: ``.venv/bin/python -m bench.python_worker [--tasks 20]``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pyspark

from bench.common import report

# What one worker does, --tasks times; prints milliseconds per task as JSON.
TASKS = """
import gc, importlib, json, sys, time
import pandas, pyarrow, pyspark.worker, spark_consumers.applier
from spark_consumers.python_worker import cheapen_next_task
tuned, tasks = sys.argv[1] == "tuned", int(sys.argv[2])
invalidate = collect = 0.0
for _ in range(tasks):
    if tuned:
        cheapen_next_task()
    start = time.perf_counter()
    importlib.invalidate_caches()
    middle = time.perf_counter()
    gc.collect()
    invalidate += middle - start
    collect += time.perf_counter() - middle
print(json.dumps({"invalidate_ms": invalidate * 1e3 / tasks, "collect_ms": collect * 1e3 / tasks}))
"""


def spark_python_path() -> str:
    """The archives Spark puts first on its Python workers' ``PYTHONPATH``."""
    home = Path(pyspark.__file__).parent
    archives = sorted((home / "python" / "lib").glob("*.zip"))
    archives += sorted((home / "jars").glob("spark-core_*.jar"))
    return os.pathsep.join(str(path) for path in archives)


def per_task_ms(tuned: bool, tasks: int) -> dict[str, float]:
    """Milliseconds per task of the set-up, in a fresh worker-like interpreter."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([spark_python_path(), str(root)])}
    mode = "tuned" if tuned else "as-is"
    out = subprocess.run(
        [sys.executable, "-c", TASKS, mode, str(tasks)],
        env=env,
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    result: dict[str, float] = json.loads(out)
    return result


def parser() -> argparse.ArgumentParser:
    """The benchmark's options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=20, help="tasks per interpreter")
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Measures both and reports them; returns the figures."""
    baseline = per_task_ms(False, args.tasks)
    ours = per_task_ms(True, args.tasks)
    total = {
        name: r["invalidate_ms"] + r["collect_ms"]
        for name, r in (("ours", ours), ("base", baseline))
    }
    report(
        "python_worker",
        ["per task", "invalidate caches ms", "gc.collect ms", "total ms", "this / as is"],
        [
            (
                "ours: cheapen_next_task first",
                ours["invalidate_ms"],
                ours["collect_ms"],
                total["ours"],
                total["ours"] / total["base"],
            ),
            (
                "baseline: PySpark as is",
                baseline["invalidate_ms"],
                baseline["collect_ms"],
                total["base"],
                1.0,
            ),
        ],
        {"tasks": args.tasks},
    )
    return {"ours": ours, "baseline": baseline}


def main() -> None:
    run(parser().parse_args())


if __name__ == "__main__":
    main()
