"""A read's rows: NDJSON as Python values, or an Arrow IPC stream as a ``pyarrow.Table``.

Rows come as NDJSON (``Accept: application/x-ndjson``): the server streams a step of the
collection at a time and reads the next only once the client took the last, so a read of
millions of rows holds one step on either side when it is iterated; and it has no bound but
``limit`` (JSON answers stop at ``CM_HTTP_MAX_ROWS``). The first line, read at once,
gives ``as_of``; the rows come in the order the read finds them (``collections query``
sorts them by value: compare as sets, or sort).

pyarrow is optional: it is imported only by :func:`read_arrow`, and a missing one is one
:class:`MissingDependency` naming ``pip install pyarrow``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Any

from collection_manager.client.errors import BrokenAnswer, ClientError
from collection_manager.client.transport import Answer
from collection_manager.core.specs import Value

if TYPE_CHECKING:
    import pyarrow

NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"
# The longest NDJSON line taken (one row).
MAX_LINE = 16 * 1024 * 1024


class MissingDependency(ClientError, ImportError):
    """An optional package a call needs is not installed (its message says how)."""


@dataclasses.dataclass(frozen=True)
class Row:
    """One row: its ``values`` by column, and its ``count`` (its multiplicity: negative
    after invalid retractions)."""

    values: dict[str, Value]
    count: int


class Rows:
    """The rows of one read, all at ``as_of``; iterate it (once) or take :attr:`rows`.

    Iterating streams: memory holds one row at a time, however many there are. Leave it
    in a ``with`` block, read it to its end, or :meth:`close` it: until then it holds its
    connection (and, on the server, its read and a stream slot).

    Attributes:
        collection: the collection's name.
        as_of: the time read at; of a bucketed collection its cut (``"12,40,7"``).
    """

    def __init__(self, answer: Answer, columns: Callable[[], tuple[str, ...]]) -> None:
        self._answer, self._columns = answer, columns
        self._column_names: tuple[str, ...] | None = None
        self._all: list[Row] | None = None
        self._started = False
        header = self._line()
        if header is None or "as_of" not in header:
            answer.close()
            raise BrokenAnswer(
                answer.url, "no header line with as_of", collection=answer.collection
            )
        self.collection = str(header.get("collection") or answer.collection)
        self.as_of: int | str = header["as_of"]

    def _line(self) -> dict[str, Any] | None:
        line = self._answer.readline(MAX_LINE + 1)
        if not line:
            return None
        if not line.endswith(b"\n"):
            self._answer.close()
            raise BrokenAnswer(self._answer.url, "a line cut short or past its bound")
        try:
            found = json.loads(line)
        except ValueError as exc:
            self._answer.close()
            raise BrokenAnswer(self._answer.url, f"a line that is not JSON ({exc})") from None
        if not isinstance(found, dict):
            raise BrokenAnswer(self._answer.url, "a line that is not a JSON object")
        return found

    def __iter__(self) -> Iterator[Row]:
        if self._all is not None:
            return iter(self._all)
        if self._started:
            raise ClientError("these rows are being read already: iterate them once, or use .rows")
        self._started = True
        return self._stream()

    def _stream(self) -> Iterator[Row]:
        try:
            while (line := self._line()) is not None:
                try:
                    yield Row(dict(line["row"]), int(line["count"]))
                except (KeyError, TypeError, ValueError):
                    raise BrokenAnswer(self._answer.url, f"not a row: {line!r:.200}") from None
        finally:
            self._answer.close()

    @property
    def rows(self) -> list[Row]:
        """Every row, read now (held in memory: iterate instead for a large read)."""
        if self._all is None:
            self._all = list(self.__iter__())
        return self._all

    @property
    def columns(self) -> tuple[str, ...]:
        """The collection's column names, in order (asked of the server once, when needed)."""
        if self._column_names is None:
            self._column_names = self._columns()
        return self._column_names

    def close(self) -> None:
        """Ends the read (the server stops reading too)."""
        self._answer.close()

    def __enter__(self) -> Rows:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def import_pyarrow() -> Any:
    """pyarrow, imported now.

    Raises:
        MissingDependency: naming ``pip install pyarrow``, when it is not installed.
    """
    try:
        import pyarrow
        import pyarrow.ipc
    except ImportError:
        raise MissingDependency(
            "rows_arrow() needs pyarrow, which is not installed: pip install pyarrow "
            "(rows() reads the same rows as Python values without it)"
        ) from None
    return pyarrow


class _Body:
    """The answer as the file pyarrow reads: read only, no seeking."""

    def __init__(self, answer: Answer) -> None:
        self._answer = answer
        self.closed = False

    def read(self, size: int = -1) -> bytes:
        return self._answer.read(size)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return False

    def close(self) -> None:
        self.closed = True


def read_arrow(answer: Answer) -> pyarrow.Table:
    """The Arrow IPC stream of ``answer`` as a table (its schema's metadata holds
    ``collection`` and ``as_of``).

    Raises:
        MissingDependency: when pyarrow is not installed.
        BrokenAnswer, ConnectionFailed: when the stream breaks off or does not parse.
    """
    try:
        pa = import_pyarrow()
        try:
            return pa.ipc.open_stream(pa.PythonFile(_Body(answer), mode="r")).read_all()
        except (pa.ArrowException, OSError) as exc:  # pyarrow's own: a short read is OSError
            raise BrokenAnswer(
                answer.url, f"not an Arrow stream ({exc})", collection=answer.collection
            ) from None
    finally:
        answer.close()
