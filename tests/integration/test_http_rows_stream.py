"""``serve``'s rows as NDJSON and Arrow, streamed a step at a time, on a real Redis.

The scan's steps are made small (``STEP_ROWS``), so that a few thousand rows take many
steps, and writes are made between steps (a hook on the scan, in the test's process where
``serve`` runs): the stream must still hand on every row of one time, each once. A client
that leaves mid-stream ends the read and frees its slot. Nothing here asserts a time.
"""

from __future__ import annotations

import collections
import io
import itertools
import json
import logging
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pytest
import redis as redis_lib
import requests

from collection_manager import devservices
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import ScanStep
from collection_manager.storage import step_reads
from collection_manager.storage.step_reads import RedisStepReads
from collection_manager.storage.store import RedisStore
from tests.integration.http_service import served
from tests.support import assert_eventually

SCHEMA = {
    "type": "record",
    "name": "health",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "value", "type": ["null", "long"]},
    ],
}
NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"
ROWS = 5_000
STEP = 50  # candidate rows per scan step: 5,000 rows take about a hundred steps


class Writer:
    """Applies appends to one collection as the consumer would, in offset order."""

    def __init__(self, store: RedisStore, spec: CollectionSpec, topic: str) -> None:
        self.store, self.spec, self.topic = store, spec, topic
        self._offsets = itertools.count()

    def append(self, updates: list[tuple[Row, int]]) -> None:
        append = Append(self.spec.name, "writer", 1, tuple(updates), 0)
        self.store.apply_requests(self.topic, 0, [(next(self._offsets), append)])


@pytest.fixture
def loaded(redis: redis_lib.Redis, unique: str) -> Iterator[Writer]:
    """A collection of 5,000 rows, one of each, in 100 replicas' worth."""
    store = RedisStore(redis)
    spec = CollectionSpec(f"rs-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    writer = Writer(store, spec, f"t-{unique}")
    for first in range(0, ROWS, 1_000):
        writer.append([((f"r{i // 50}", i, i), 1) for i in range(first, first + 1_000)])
    yield writer
    store.drop_collection(spec.name)


@pytest.fixture
def small_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(step_reads, "STEP_ROWS", STEP)


def _writes_between_steps(monkeypatch: pytest.MonkeyPatch, writer: Writer) -> list[int]:
    """Every fifth scan step, the collection changes first: a row not yet read goes, a row
    gets a second copy, a new row comes, and a row read already goes (in some order of the
    hash, so which are behind the scan is chance: every kind is exercised over the steps)."""
    scan = RedisStepReads.scan
    steps: list[int] = []

    def changing(self: RedisStepReads, cursor: object | None) -> ScanStep[Row]:
        n = len(steps)
        steps.append(n)
        if n % 5 == 4:
            k = n * 7
            writer.append(
                [
                    ((f"r{k // 50}", k, k), -1),  # gone
                    ((f"r{(k + 1) // 50}", k + 1, k + 1), 1),  # a second copy
                    (("new", 100_000 + n, None), 1),  # a row that was not there
                ]
            )
        return scan(self, cursor)

    monkeypatch.setattr(RedisStepReads, "scan", changing)
    return steps


def _at(writer: Writer, as_of: int) -> dict[Row, int]:
    """The collection at ``as_of``: its rows now, with the changes after ``as_of`` undone."""
    rows = collections.Counter(writer.store.snapshot(writer.spec.name).rows)
    for change in writer.store.reader.tail(writer.spec.name, since=as_of + 1):
        rows[change.row] -= change.diff
    return {row: count for row, count in rows.items() if count}


def _row(obj: dict[str, Any]) -> Row:
    return (obj["replica_id"], obj["worker_id"], obj["value"])


@pytest.mark.usefixtures("small_steps")
def test_an_ndjson_stream_of_many_steps_hands_on_each_row_of_one_time_once(
    endpoints: devservices.Endpoints, loaded: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    steps = _writes_between_steps(monkeypatch, loaded)
    with served(endpoints.redis_url) as service:
        url = f"{service.url}/api/v1/collections/{loaded.spec.name}/rows"
        answer = requests.get(url, headers={"Accept": NDJSON}, timeout=60)
    assert answer.status_code == 200 and answer.headers["Transfer-Encoding"] == "chunked"
    lines = [json.loads(line) for line in answer.text.splitlines()]
    as_of = lines[0]["as_of"]
    handed = collections.Counter(_row(line["row"]) for line in lines[1:])
    assert len(steps) > ROWS // STEP // 2  # many steps, and writes between them
    assert max(handed.values()) == 1  # each row once
    assert {_row(line["row"]): line["count"] for line in lines[1:]} == _at(loaded, as_of)


@pytest.mark.usefixtures("small_steps")
def test_an_arrow_stream_is_a_record_batch_per_step_of_one_time(
    endpoints: devservices.Endpoints, loaded: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _writes_between_steps(monkeypatch, loaded)
    with served(endpoints.redis_url) as service:
        url = f"{service.url}/api/v1/collections/{loaded.spec.name}/rows"
        answer = requests.get(url, headers={"Accept": ARROW}, timeout=60)
    assert answer.status_code == 200
    reader = pa.ipc.open_stream(io.BytesIO(answer.content))
    batches = list(reader)
    as_of = int(reader.schema.metadata[b"as_of"])
    assert len(batches) > ROWS // STEP // 2  # about one per step
    assert max(batch.num_rows for batch in batches) <= 2 * STEP  # about a step each
    rows = pa.Table.from_batches(batches, reader.schema).to_pylist()
    handed = collections.Counter(_row(r) for r in rows)
    assert max(handed.values()) == 1
    assert {_row(r): r["count"] for r in rows} == _at(loaded, as_of)


@pytest.mark.usefixtures("small_steps")
def test_a_client_that_leaves_mid_stream_ends_the_read_and_frees_its_slot(
    endpoints: devservices.Endpoints,
    loaded: Writer,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stream's scan is held after its fifth step until the client has gone: the server then
    fails to write, stops reading (a step or two more, not the hundred left) and gives the
    stream's slot back; the log has no traceback."""
    scan = RedisStepReads.scan
    scanned: list[int] = []
    gone = threading.Event()

    streamed: list[RedisStepReads] = []  # the stream's reader: other reads go freely

    def held(self: RedisStepReads, cursor: object | None) -> ScanStep[Row]:
        if not streamed:
            streamed.append(self)
        if self is streamed[0]:
            scanned.append(len(scanned))
            if len(scanned) > 5:
                gone.wait(30)
        return scan(self, cursor)

    monkeypatch.setattr(RedisStepReads, "scan", held)
    caplog.set_level(logging.DEBUG)
    with served(endpoints.redis_url, http_max_streams=1) as service:
        base = f"{service.url}/api/v1/collections/{loaded.spec.name}"
        answer = requests.get(f"{base}/rows", headers={"Accept": NDJSON}, stream=True, timeout=60)
        assert answer.status_code == 200
        lines = answer.iter_lines()  # kept: a line iterator collected closes the answer
        next(lines)  # the header line: the stream runs
        # A streamed read takes a stream's slot: another stream is refused, JSON is not.
        refused = requests.get(f"{base}/changes", timeout=30)
        assert refused.status_code == 503 and refused.json()["type"].endswith(":too-many-streams")
        assert requests.get(f"{base}/rows", params={"limit": 1}, timeout=30).status_code == 200
        answer.close()
        gone.set()
        assert_eventually(lambda: _free(service.server.api.streams.taken), timeout=30)
        left_at = len(scanned)
        again = requests.get(f"{base}/rows", headers={"Accept": NDJSON}, timeout=60)
        assert again.status_code == 200 and len(again.text.splitlines()) == 1 + ROWS
    assert left_at < 5 + 10  # the read stopped: a hundred steps were left
    assert not [r for r in caplog.records if r.exc_info or "Traceback" in r.getMessage()]


def _free(taken: int) -> None:
    assert taken == 0


def test_a_json_read_reads_one_row_past_its_bound_and_no_further(
    endpoints: devservices.Endpoints, loaded: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    limits: list[int | None] = []
    reading = RedisStore.stepped_snapshot

    def recorded(self: RedisStore, collection: str, where: Any = None, limit: Any = None) -> Any:
        limits.append(limit)
        return reading(self, collection, where, limit)

    monkeypatch.setattr(RedisStore, "stepped_snapshot", recorded)
    with served(endpoints.redis_url, http_max_rows=100) as service:
        url = f"{service.url}/api/v1/collections/{loaded.spec.name}/rows"
        refused = requests.get(url, timeout=30)
    assert refused.status_code == 422 and refused.json()["bound"] == 100
    assert limits == [101]


def test_a_client_that_takes_nothing_is_dropped_after_the_request_timeout(
    endpoints: devservices.Endpoints, redis: redis_lib.Redis, unique: str
) -> None:
    """A client that sends its request, then reads nothing: once the socket buffers are
    full (100,000 rows, about 7 MB, are more than they hold), the server's send waits;
    after CM_HTTP_REQUEST_TIMEOUT_S it drops the connection (no last chunk) and gives the
    stream's slot back."""
    store = RedisStore(redis)
    spec = CollectionSpec(f"rs-slow-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    writer, rows = Writer(store, spec, f"t-slow-{unique}"), 100_000
    for first in range(0, rows, 5_000):
        writer.append([((f"r{i // 50}", i, i), 1) for i in range(first, first + 5_000)])
    try:
        with served(endpoints.redis_url, http_request_timeout_s=2.0) as service:
            received = _taking_nothing(service.server, f"/api/v1/collections/{spec.name}/rows")
    finally:
        store.drop_collection(spec.name)
    assert received.startswith(b"HTTP/1.1 200")
    assert not received.endswith(b"0\r\n\r\n")  # cut short: no client takes it for whole
    assert received.count(b'"row"') < rows


def _taking_nothing(server: Any, path: str) -> bytes:
    """Asks for ``path`` as NDJSON and reads nothing until the server gave the stream's slot
    back; then what had come."""
    reader = socket.socket()
    reader.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # full soon
    reader.connect((server.host, server.port))
    reader.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nAccept: {NDJSON}\r\n\r\n".encode())
    slots = server.api.streams
    assert_eventually(lambda: _busy(slots.taken), timeout=30)
    assert_eventually(lambda: _free(slots.taken), timeout=120, interval=0.2)
    received = b""
    reader.settimeout(30)
    while chunk := reader.recv(65536):
        received += chunk
    reader.close()
    return received


def _busy(taken: int) -> None:
    assert taken == 1
