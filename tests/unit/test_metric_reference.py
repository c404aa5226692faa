"""The metric reference in docs/operations.md is the one the metrics render, and every
metric follows Prometheus' naming: one prefix, base units, counters ending in _total."""

from __future__ import annotations

import re
from pathlib import Path

from collection_manager.cli.metric_reference import REGENERATE, documented, render_reference

OPERATIONS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_the_operations_page_holds_the_generated_metric_reference() -> None:
    assert documented(OPERATIONS.read_text()) == render_reference(), (
        f"{OPERATIONS.name}'s metric reference differs from the code; regenerate it with: "
        f".venv/bin/{REGENERATE}"
    )


def test_every_metric_is_named_as_prometheus_asks() -> None:
    rows = re.findall(r"^\| `(\w+)` \| (\w+) \|", render_reference(), re.M)
    assert len(rows) > 20
    for name, kind in rows:
        assert re.fullmatch(r"cm_(consumer|controller|agent|http)_[a-z_]+", name), name
        assert name.endswith("_total") == (kind == "counter"), name
        assert not re.search(r"_(ms|milliseconds|bytes_total)$", name), name
