"""Subcommands of the ``collection-manager`` CLI, one module each.

Every module has ``register(commands)``, which adds its subparsers and sets ``run`` on
them; ``run(args) -> int`` is the exit status. Printing (tables with rich, or JSON) happens
only here, at the edge.

The reading commands share one output convention (:func:`add_format_option`):

- ``table`` (the default on a terminal): tables for people, each under a title line, and
  a plain line such as ``no rows`` instead of an empty table; one too wide for the
  terminal is printed a row at a time, a ``column value`` line per cell;
- ``tsv`` (the default when stdout is no terminal: a pipe, a file): per table a header
  line and one line per row, cells separated by tabs, no title and no box drawing, as
  ``cut``, ``awk`` and ``sort`` read them;
- ``json``: one JSON document for scripts, whose shape each command's ``--help`` shows by
  example. Times in it are ms since the Unix epoch, in fields named ``*_ms``.

``--no-headers`` leaves out the titles and header lines. ``--format`` and ``--no-headers``
go before or after the command. A command builds its JSON value and its
:class:`TableView` objects with pure functions and hands both to :func:`show`.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import difflib
import sys
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.json_text import indented

if TYPE_CHECKING:
    from rich.console import Console

    from collection_manager.core.specs import CollectionSpec
    from collection_manager.storage.store import RedisStore

FORMATS = ("table", "tsv", "json")
FORMAT_HELP = (
    "table for people (the default on a terminal); tsv: a header line, then a line per "
    "row, cells separated by tabs (the default when piped); json for scripts"
)
NO_HEADERS_HELP = "table and tsv: leave out titles and header lines"
# Beyond this many, an error lists the first ones and points at `collections list`.
MAX_LISTED = 20
CREATE_HINT = (
    "create the built-in ones with `collection-manager collections create-introspection` "
    "or your own with `collection-manager collections create NAME --schema FILE.avsc`"
)


@dataclasses.dataclass(frozen=True)
class TableView:
    """A table for people.

    Attributes:
        title: shown above the table.
        columns: the headers.
        rows: the cells, row by row (see :func:`cell_text`).
        empty: the line printed instead of a table without rows.
        null: how a None cell is shown.
    """

    title: str
    columns: Sequence[str]
    rows: Sequence[Sequence[object]]
    empty: str
    null: str = ""


def json_text(value: Any) -> str:
    """``value`` as the JSON the CLI prints: indented, keys in the order given."""
    return indented(value)


def add_format_option(parser: argparse.ArgumentParser, examples: Mapping[str, Any]) -> None:
    """Adds ``--format table|json``; ``--help`` then shows each example of the JSON shape.

    Args:
        parser: the subcommand's parser.
        examples: command line (``collections list``) -> what its ``--format json`` prints.
    """
    add_output_options(parser, f"{FORMAT_HELP}, shaped as in the examples below")
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = "\n\n".join(
        f"`collection-manager {command} --format json` prints, for example:\n{json_text(value)}"
        for command, value in examples.items()
    )


def add_output_options(parser: argparse.ArgumentParser, format_help: str) -> None:
    """``--format`` and ``--no-headers``, set only where given: the top level takes them
    too, and ``output_format`` decides what an absent one means."""
    parser.add_argument("--format", choices=FORMATS, default=argparse.SUPPRESS, help=format_help)
    parser.add_argument(
        "--no-headers", action="store_true", default=argparse.SUPPRESS, help=NO_HEADERS_HELP
    )


def output_format(given: str | None) -> str:
    """The format asked for, or without one: table on a terminal, tsv otherwise."""
    if given is not None:
        return given
    return "table" if sys.stdout.isatty() else "tsv"


def tsv_cell(value: object, null: str = "") -> str:
    """A cell of a tab-separated line: ``cell_text``, with tabs, newlines and backslashes
    escaped (``\\t``, ``\\n``, ``\\\\``) so that one row stays one line of cells."""
    text = cell_text(value, null)
    if "\\" in text or "\t" in text or "\n" in text or "\r" in text:
        text = text.replace("\\", "\\\\").replace("\t", "\\t").replace("\n", "\\n")
        text = text.replace("\r", "\\r")
    return text


def tsv_line(cells: Sequence[object], null: str = "") -> str:
    """One line of tab-separated cells."""
    return "\t".join(tsv_cell(cell, null) for cell in cells)


def cell_text(value: object, null: str = "") -> str:
    """How a value reads in a table: booleans as ``true``/``false`` (as ``--where`` takes them)."""
    if value is None:
        return null
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def print_table(
    title: str,
    columns: Sequence[str],
    rows: Sequence[Sequence[object]],
    null: str = "",
    headers: bool = True,
    console: Console | None = None,
) -> None:
    """Prints a table; None cells show as ``null``. Cells are text, never rich markup.

    A table too wide for the terminal even with its cells wrapped at spaces (status's
    collections at 80 columns) is printed a row at a time instead, one ``column value``
    line per cell: a table squeezed further would cut every name (``arra…``).

    Args:
        console: where to print (default: the terminal's width; off a terminal, no width).
    """
    from rich.console import Console
    from rich.measure import Measurement
    from rich.table import Table
    from rich.text import Text

    if console is None:
        console = Console()
        if not console.is_terminal:
            # Piped or captured: no terminal width to fit, so never wrap or cut cells.
            console = Console(width=10_000)
    table = Table(show_header=headers)
    for column in columns:
        table.add_column(Text(column))
    for row in rows:
        table.add_row(*(Text(cell_text(cell, null)) for cell in row))
    # The title on its own line: a title above the table would wrap to the table's width.
    if headers:
        console.print(Text(title))
    # Measured as if unbounded: a measurement within the console's width is clamped to it.
    unbounded = console.options.update_width(10_000)
    fits = Measurement.get(console, unbounded, table).minimum <= console.width
    console.print(table if fits or not headers else _row_by_row(columns, rows, null))


def _row_by_row(columns: Sequence[str], rows: Sequence[Sequence[object]], null: str) -> Any:
    """Each row as lines of ``column value``, a blank line between rows; a value too long
    for its line wraps, never cut."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    blocks: list[Any] = []
    for number, row in enumerate(rows):
        grid = Table.grid(padding=(0, 2))
        grid.add_column(style="bold", no_wrap=True)
        grid.add_column(overflow="fold")
        for column, cell in zip(columns, row, strict=True):
            grid.add_row(Text(column), Text(cell_text(cell, null)))
        blocks += [Text("")] * bool(number) + [grid]
    return Group(*blocks, Text(""))  # a blank line before the next table's title


def print_tsv(view: TableView, headers: bool = True) -> None:
    """Prints a table as tab-separated lines: its header line (unless not ``headers``),
    then its rows. An empty table is its header line alone."""
    if not view.columns:  # a line of its own, not a table (status: "no controller seen")
        if headers:
            print(view.empty)
        return
    if headers:
        print(tsv_line(view.columns))
    for row in view.rows:
        print(tsv_line(row, view.null))


def print_json(value: Any) -> None:
    """Prints ``value`` as JSON for scripts."""
    print(json_text(value))


def show(fmt: str, data: Any, *tables: TableView, headers: bool = True) -> None:
    """Prints ``data`` as JSON for ``--format json``; else each table as a table (or its
    empty line) or as tab-separated lines (several: a blank line between them)."""
    if fmt == "json":
        print_json(data)
        return
    for number, view in enumerate(tables):
        if fmt == "tsv":
            if number:
                print()
            print_tsv(view, headers)
        elif view.rows:
            print_table(view.title, view.columns, view.rows, view.null, headers)
        elif headers:
            print(view.empty)


def plural(count: int, noun: str) -> str:
    """``1 row``, ``2 rows``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def listing(names: Sequence[str], limit: int = MAX_LISTED) -> str:
    """``a, b, c``; beyond ``limit`` names, the first ones and how many more."""
    if len(names) <= limit:
        return ", ".join(names)
    rest = len(names) - limit
    return f"{', '.join(names[:limit])} and {rest} more (`collection-manager collections list`)"


def unknown_collection(name: str, known: Sequence[str]) -> UnknownCollectionError:
    """The one-line error for a collection nobody created, naming the ones that exist."""
    if not known:
        return UnknownCollectionError(
            f"unknown collection {name!r}: there are no collections yet; {CREATE_HINT}"
        )
    close = difflib.get_close_matches(name, known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return UnknownCollectionError(
        f"unknown collection {name!r}{hint}; collections: {listing(known)}"
    )


def collection_spec(store: RedisStore, name: str) -> CollectionSpec:
    """The definition of ``name``.

    Raises:
        UnknownCollectionError: one line naming the existing collections.
    """
    known = store.collections()
    if name not in known:
        raise unknown_collection(name, known)
    return store.spec(name)


def header(name: str, columns: Sequence[str]) -> str:
    """A header for a column the CLI adds (count, time, diff) that no row column shadows."""
    return f"({name})" if name in columns else name


def _span(seconds: int) -> str:
    for unit, size, up_to in (("s", 1, 120), ("min", 60, 120), ("h", 3600, 48)):
        if seconds < size * up_to:
            return f"{seconds // size}{unit}"
    return f"{seconds // 86400}d"


def moment(ms: int | None, now_ms: int) -> str | None:
    """``2025-01-01 12:00:03Z (in 3s)``: UTC to the second, and how far from now."""
    if ms is None:
        return None
    at = datetime.datetime.fromtimestamp(ms / 1000, tz=datetime.UTC)
    seconds = round((ms - now_ms) / 1000)
    if seconds == 0:
        relative = "now"
    elif seconds > 0:
        relative = f"in {_span(seconds)}"
    else:
        relative = f"{_span(-seconds)} ago"
    return f"{at:%Y-%m-%d %H:%M:%S}Z ({relative})"
