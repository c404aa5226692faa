"""How the demo shows itself: a live ``rich`` view on a terminal, plain lines otherwise.

Both reporters take the :class:`~collection_manager.demo.frames.Frame` the demo observes about
twice a second. The live view redraws one table in place; the plain reporter (CI, a pipe,
tests) prints each new event once and a progress line every few seconds, so a log of the
run stays short and readable.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TextIO

from rich.console import Console, Group
from rich.live import Live
from rich.table import Table
from rich.text import Text

from collection_manager.demo.frames import (
    Frame,
    collection_table,
    consumer_line,
    progress_line,
    replica_table,
)
from collection_manager.demo.verify import SUMMARY_TITLE, Verification, summary_table

EVENTS_SHOWN = 6
_STYLES = {"survives": "green", "removed": "yellow", "killed": "red"}


def _numeric(cells: list[str]) -> bool:
    # Counts, epochs and lease times ("4.2s") align right; "-" and "" stand for none.
    return any(cells) and all(
        cell.removesuffix("s").replace(".", "", 1).isdigit() or cell in ("", "-") for cell in cells
    )


def _table(headers: list[str], lines: list[list[str]]) -> Table:
    table = Table()
    for index, header in enumerate(headers):
        numeric = _numeric([line[index] for line in lines])
        table.add_column(header, justify="right" if numeric else "left", no_wrap=True)
    for line in lines:
        table.add_row(*(Text(cell, style=_STYLES.get(cell, "")) for cell in line))
    return table


def render(frame: Frame) -> Group:
    """The live view of one frame: replicas, collections, the consumer, the latest events."""
    # Titles on lines of their own: a table's title would wrap to the table's width.
    title = Text(f"collection-manager demo  {frame.elapsed_s:5.1f}s  {frame.phase}", "bold")
    parts: list[Table | Text] = [title]
    if frame.console:
        note = f" ({frame.console_note})" if frame.console_note else ""
        parts.append(Text(f"open the console: {frame.console}{note}", "bold cyan"))
    parts += [
        _table(*replica_table(frame)),
        Text("rows in Redis"),
        _table(*collection_table(frame)),
        Text(consumer_line(frame.consumer)),
    ]
    parts.extend(Text(f"  {event}", style="dim") for event in frame.events[-EVENTS_SHOWN:])
    return Group(*parts)


def render_summary(verification: Verification) -> Group:
    """The verdict: one line per collection, then whether Redis is exactly right."""
    table = _table(*summary_table(verification))
    if verification.ok:
        verdict = Text("verified: Redis holds exactly what the surviving agents hold", "green")
    else:
        verdict = Text("MISMATCH: Redis differs from what the agents hold", "bold red")
    return Group(Text(SUMMARY_TITLE), table, verdict)


@contextlib.contextmanager
def _logs_to(stream: TextIO) -> Iterator[None]:
    """Points the root logger's stream handlers at ``stream`` for a while.

    Under a live view, ``sys.stderr`` is rich's proxy, which prints above the view; a
    handler still holding the real stderr would scribble over it.
    """
    handlers = [h for h in logging.getLogger().handlers if isinstance(h, logging.StreamHandler)]
    previous = [h.setStream(stream) for h in handlers]
    try:
        yield
    finally:
        for handler, old in zip(handlers, previous, strict=True):
            if old is not None:
                handler.setStream(old)


class LiveReporter:
    """Redraws the view in place, on a terminal. Use as a context manager."""

    def __init__(self, console: Console) -> None:
        self._live = Live(console=console, refresh_per_second=4, transient=False)
        self._logs = contextlib.ExitStack()

    def __enter__(self) -> LiveReporter:
        self._live.start()
        self._logs.enter_context(_logs_to(sys.stderr))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._logs.close()
        self._live.stop()

    def show(self, frame: Frame) -> None:
        """Redraws with ``frame``."""
        self._live.update(render(frame))


class PlainReporter:
    """Prints new events at once and a progress line every ``every_s`` seconds.

    Args:
        write: prints one line.
        every_s: seconds between two progress lines.
    """

    def __init__(self, write: Callable[[str], None] = print, every_s: float = 2.0) -> None:
        self._write = write
        self._every_s = every_s
        self._printed_events = 0
        self._phase = ""
        self._next_line = 0.0

    def show(self, frame: Frame) -> None:
        """Prints what is new in ``frame``."""
        for event in frame.events[self._printed_events :]:
            self._write(f"  {event}")
        self._printed_events = len(frame.events)
        now = time.monotonic()
        if frame.phase != self._phase or now >= self._next_line:
            self._write(progress_line(frame))
            self._phase, self._next_line = frame.phase, now + self._every_s
