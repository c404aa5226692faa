"""Server-Sent Events as a browser's ``EventSource`` parses them (pure: bytes in, events out).

The WHATWG rules, as a change feed needs them: lines end with CRLF, LF or CR; a line
starting with ``:`` is a comment (the server's keep-alives, counted); ``field: value``
with one optional space after the colon; ``data`` lines joined by newlines; ``id`` sets
the last event id, which stays for the events after it until another ``id`` (a value with
NUL is ignored); ``retry`` (digits only) the reconnection delay; a blank line ends an
event, which is handed on only when it has data. What was read of an event the stream
broke off in is never handed on: a reconnection asks for it again.
"""

from __future__ import annotations

import dataclasses

# The longest line taken: an event of the server holds at most 2,000 changes, far below.
MAX_LINE = 64 * 1024 * 1024


class StreamError(ValueError):
    """The bytes are not an event stream (a line past :data:`MAX_LINE`, not UTF-8)."""


@dataclasses.dataclass(frozen=True)
class Event:
    """One event: its type (``message`` unless named), the last event id when it ended
    (None: none was set yet) and its data."""

    kind: str
    id: str | None
    data: str


class LineSplitter:
    """Bytes in, lines (without their end) out, whatever the chunks' boundaries."""

    def __init__(self, max_line: int = MAX_LINE) -> None:
        self._pending = b""
        self._max_line = max_line
        self._after_cr = False  # the last chunk ended with CR: an LF next belongs to it

    def feed(self, data: bytes) -> list[str]:
        """The lines ``data`` completes.

        Raises:
            StreamError: for a line longer than the bound, or not UTF-8.
        """
        if self._after_cr and data.startswith(b"\n"):
            data = data[1:]
        self._after_cr = data.endswith(b"\r")
        text = self._pending + data
        lines = text.replace(b"\r\n", b"\n").replace(b"\r", b"\n").split(b"\n")
        self._pending = lines.pop()
        if len(self._pending) > self._max_line:
            raise StreamError(f"a line of more than {self._max_line} bytes")
        try:
            return [line.decode("utf-8") for line in lines]
        except UnicodeDecodeError as exc:
            raise StreamError(f"not UTF-8: {exc.reason}") from None


class EventParser:
    """Lines in, events out.

    Attributes:
        last_id: the last event id set so far (what a reconnection would send).
        retry_ms: the reconnection delay the stream asked for, if it did.
        comments: how many comment lines came (keep-alives).
    """

    def __init__(self) -> None:
        self.last_id: str | None = None
        self.retry_ms: int | None = None
        self.comments = 0
        self._kind = ""
        self._data: list[str] = []

    def line(self, line: str) -> Event | None:
        """Takes one line; the event it ends, if it ends one with data."""
        if line == "":
            return self._dispatch()
        if line.startswith(":"):
            self.comments += 1
            return None
        name, colon, value = line.partition(":")
        if colon and value.startswith(" "):
            value = value[1:]
        if name == "event":
            self._kind = value
        elif name == "data":
            self._data.append(value)
        elif name == "id":
            if "\0" not in value:
                self.last_id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self.retry_ms = int(value)
        return None

    def _dispatch(self) -> Event | None:
        kind, data = self._kind or "message", self._data
        self._kind, self._data = "", []
        if not data:
            return None
        return Event(kind, self.last_id, "\n".join(data))

    def feed(self, lines: list[str]) -> list[Event]:
        """The events ``lines`` end, in order."""
        events = []
        for line in lines:
            event = self.line(line)
            if event is not None:
                events.append(event)
        return events
