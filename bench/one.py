"""Runs one benchmark's ``run`` and writes its figures as JSON (``bench.all`` spawns this).

Each benchmark runs in a process of its own so that Spark, Kafka clients and threads of
one cannot disturb the next, and a crash or hang costs that benchmark only.
Run: ``.venv/bin/python -m bench.one NAME RESULT.json [the benchmark's options]``.
"""

from __future__ import annotations

import importlib
import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> None:
    name, result_path, *options = argv
    module = importlib.import_module(f"bench.{name}")
    args = module.parser().parse_args(options)
    start = time.perf_counter()
    figures = module.run(args)
    record = {"scale": vars(args), "run_s": time.perf_counter() - start, "figures": figures}
    Path(result_path).write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main(sys.argv[1:])
