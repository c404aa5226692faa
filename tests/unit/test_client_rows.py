"""A read's rows in the client (collection_manager/client/rows.py), without services: NDJSON
read a line at a time as it is iterated, answers that break off, Arrow read from the
server's own encoder, and pyarrow missing as one error naming how to install it."""

from __future__ import annotations

import io
import sys
from collections.abc import Iterator

import pyarrow as pa
import pytest

from collection_manager.client import Client, errors
from collection_manager.client.rows import MissingDependency, Row, Rows, read_arrow
from collection_manager.core.specs import CollectionSpec
from collection_manager.http.encode import arrow_answer, ndjson_answer

URL = "http://127.0.0.1:8080/api/v1/collections/c/rows"
SCHEMA = {
    "type": "record",
    "name": "r",
    "fields": [{"name": "replica_id", "type": "string"}, {"name": "count", "type": "long"}],
}
SPEC = CollectionSpec("c", SCHEMA)


class FakeAnswer:
    """An answer whose body the server's encoder makes as it is read, part by part."""

    collection = "c"
    url = URL

    def __init__(self, parts: Iterator[bytes]) -> None:
        self._parts, self._buffer = parts, io.BytesIO()
        self.parts_made, self.closed = 0, False

    def _more(self) -> bool:
        part = next(self._parts, None)
        if part is None:
            return False
        self.parts_made += 1
        rest = self._buffer.read()
        self._buffer = io.BytesIO(rest + part)
        return True

    def readline(self, limit: int) -> bytes:
        while True:
            position = self._buffer.tell()
            line = self._buffer.readline(limit)
            if line.endswith(b"\n") or not self._more():
                return line
            self._buffer.seek(0)
            self._buffer = io.BytesIO(line + self._buffer.read()) if position else self._buffer

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer.getvalue()) - self._buffer.tell() < size:
            if not self._more():
                break
        return self._buffer.read(size)

    def close(self) -> None:
        self.closed = True


def steps(count: int, per_step: int) -> Iterator[dict[tuple[object, ...], int]]:
    for step in range(count):
        yield {(f"r{step}-{n}", n): 1 for n in range(per_step)}


def test_rows_are_read_as_they_are_iterated_at_the_as_of_of_the_header() -> None:
    answer = FakeAnswer(ndjson_answer(SPEC, 7, steps(1000, 10)))
    rows = Rows(answer, lambda: ("replica_id", "count"))
    assert (rows.collection, rows.as_of) == ("c", 7)
    assert answer.parts_made == 1  # the header alone
    it = iter(rows)
    assert next(it) == Row({"replica_id": "r0-0", "count": 0}, 1)
    assert answer.parts_made == 2  # one step: memory is bounded however many there are
    assert sum(1 for _ in it) == 10 * 1000 - 1
    assert answer.closed
    with pytest.raises(errors.ClientError, match="iterate them once"):
        iter(rows)


def test_rows_read_whole_are_kept_and_columns_asked_for_once() -> None:
    asked = []
    rows = Rows(
        FakeAnswer(ndjson_answer(SPEC, "1,2", steps(2, 2))), lambda: asked.append(1) or ("a",)
    )
    assert rows.as_of == "1,2"
    assert len(rows.rows) == 4 and list(rows) == rows.rows
    assert rows.columns == rows.columns == ("a",) and asked == [1]


@pytest.mark.parametrize(
    ("body", "says"),
    [
        (b"", "no header line"),
        (b'{"collection":"c"}\n', "no header line"),
        (b'{"as_of":1}\n{"row":{"a":1},"cou', "cut short"),
        (b'{"as_of":1}\nnot json\n', "not JSON"),
        (b'{"as_of":1}\n{"row":{"a":1}}\n', "not a row"),
    ],
)
def test_an_answer_that_breaks_off_or_is_not_ndjson_is_a_broken_answer(
    body: bytes, says: str
) -> None:
    def read() -> None:
        list(Rows(FakeAnswer(iter([body])), lambda: ()))

    with pytest.raises(errors.BrokenAnswer, match=says):
        read()


def test_arrow_is_read_from_what_the_server_encodes_and_a_cut_stream_is_broken() -> None:
    body = b"".join(arrow_answer(SPEC, 7, steps(3, 2)))
    table = read_arrow(FakeAnswer(iter([body])))  # type: ignore[arg-type]
    assert table.num_rows == 6 and table.schema.metadata[b"as_of"] == b"7"
    assert table.column_names == ["replica_id", "count", "(count)"]
    with pytest.raises(errors.BrokenAnswer, match="not an Arrow stream"):
        read_arrow(FakeAnswer(iter([body[: len(body) // 2]])))  # type: ignore[arg-type]


def test_without_pyarrow_rows_arrow_says_how_to_install_it_and_asks_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    client = Client("http://127.0.0.1:9")  # nothing listens there: nothing is asked
    with pytest.raises(MissingDependency, match="pip install pyarrow") as missing:
        client.rows_arrow("c")
    assert isinstance(missing.value, ImportError)
    assert isinstance(missing.value, errors.ClientError)
    assert pa.__name__ == "pyarrow"  # the module itself is untouched for the other tests
