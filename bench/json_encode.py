"""The JSON encoder of the hot paths (collection_manager/core/json_text.py: orjson) against
the same run's baseline, the standard library's ``json.dumps`` as the answers used it.

It encodes ``--rows`` NDJSON row lines of the HTTP answers' shape (``{"row": {...},
"count": n}``, bench/http_reads.py's columns) and one ``--format json`` document of them,
the best of ``--repeats``, and prints µs per row, rows per second and the load average.
Pin it to a core for steadier figures: ``taskset -c 1 .venv/bin/python -m bench.json_encode``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence

from collection_manager.core.json_text import compact, indented


def _rows(count: int) -> list[dict[str, object]]:
    return [
        {"row": {"replica_id": f"r{i // 1000}", "operator_id": i, "records": i * 7}, "count": 1}
        for i in range(count)
    ]


def _best(repeats: int, work: Callable[[], object]) -> float:
    best = float("inf")
    for _ in range(repeats):
        began = time.perf_counter()
        work()
        best = min(best, time.perf_counter() - began)
    return best


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rows = _rows(args.rows)

    def stdlib_lines() -> object:
        return [json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() for r in rows]

    cases = {
        "NDJSON lines, json.dumps (baseline)": stdlib_lines,
        "NDJSON lines, orjson (shipped)": lambda: [compact(r) for r in rows],
        "a JSON answer (one document), json.dumps (baseline)": lambda: json.dumps(
            rows, separators=(",", ":"), ensure_ascii=False
        ).encode(),
        "a JSON answer (one document), orjson (shipped)": lambda: compact(rows),
        "--format json, json.dumps indent=2 (baseline)": lambda: json.dumps(rows, indent=2),
        "--format json, orjson OPT_INDENT_2 (shipped)": lambda: indented(rows),
    }
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"| encoding {args.rows:,} rows (best of {args.repeats}) | µs per row | rows/s |")
    print("|---|---|---|")
    for label, work in cases.items():
        seconds = _best(args.repeats, work)
        print(f"| {label} | {seconds / args.rows * 1e6:.2f} | {args.rows / seconds:,.0f} |")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
