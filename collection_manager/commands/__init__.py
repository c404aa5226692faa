"""Subcommands of the ``collection-manager`` CLI, one module each.

Every module has ``register(commands)``, which adds its subparsers and sets ``run`` on
them; ``run(args) -> int`` is the exit status. Printing (tables with rich, or JSON) happens
only here, at the edge.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Prints a table (None cells stay empty)."""
    from rich.console import Console
    from rich.table import Table

    table = Table(title=title)
    for column in columns:
        table.add_column(column)
    for row in rows:
        table.add_row(*("" if cell is None else str(cell) for cell in row))
    Console().print(table)


def print_json(value: Any) -> None:
    """Prints ``value`` as JSON for scripts."""
    print(json.dumps(value, indent=2, default=str))
