"""What every benchmark shares: services, timing, a printed table and a JSON record."""

from __future__ import annotations

import json
import platform
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from collection_manager import devservices
from collection_manager.config import InfraConfig, from_env

RESULTS = Path(__file__).parent / "results"


@contextmanager
def services() -> Iterator[devservices.Endpoints]:
    """Kafka and Redis for a benchmark; those it had to start are stopped after."""
    config = from_env(InfraConfig)
    endpoints = devservices.up(config)
    try:
        yield endpoints
    finally:
        devservices.down(config, endpoints.started)


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    import os

    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
    }


def report(
    name: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[Any]],
    extra: dict[str, Any] | None = None,
) -> Path:
    """Prints the table and writes ``bench/results/<name>.json``; returns its path."""
    table = Table(title=name)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*(f"{cell:,.2f}" if isinstance(cell, float) else str(cell) for cell in row))
    Console().print(table)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{name}.json"
    record = {
        "benchmark": name,
        "machine": machine(),
        "columns": list(columns),
        "rows": [list(row) for row in rows],
        **(extra or {}),
    }
    path.write_text(json.dumps(record, indent=2))
    return path
