"""``serve``'s HTTP API on a real Redis (and Kafka, for status): every endpoint, bad input,
the bounds, the token, TLS, CORS, and change streams resumed after a disconnect.

Each test has its own collections (named after the test) and its own ``serve`` on a free
loopback port, so it runs beside the other tests on the session's services. Nothing here
asserts a time: bounds are shown with reads made slow on purpose, never with a stopwatch.
"""

from __future__ import annotations

import io
import itertools
import json
import logging
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
import redis as redis_lib
import requests

from collection_manager import devservices
from collection_manager.cli.main import main
from collection_manager.config import HttpConfig, ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.core.buckets import bucket_of
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.http import changes
from collection_manager.http.context import Call, Sources
from collection_manager.http.limits import Deadline
from collection_manager.storage.heartbeats import CONSUMER, Heartbeat, alive_key, beat_key
from collection_manager.storage.keys import CATALOG, consumer_key
from collection_manager.storage.store import RedisStore
from spark_consumers.metrics import BatchMetrics, record_batch
from tests.integration.http_service import Event, EventReader, self_signed, served
from tests.support import assert_eventually

SCHEMA = {
    "type": "record",
    "name": "health",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "hydrated", "type": "boolean"},
        {"name": "count", "type": ["null", "long"]},
    ],
}
NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"
PROBLEM = "application/problem+json"
BUCKETS = 4


class Writer:
    """Applies requests to one collection as the consumer would, in offset order."""

    def __init__(self, store: RedisStore, spec: CollectionSpec, topic: str) -> None:
        self.store, self.spec, self.topic = store, spec, topic
        self._offsets = itertools.count()

    def append(self, updates: list[tuple[Row, int]], replica: str = "writer") -> None:
        append = Append(self.spec.name, replica, 1, tuple(updates), 0)
        parts = route_append(append, self.spec) if self.spec.buckets > 1 else [append]
        self.apply(*parts)

    def apply(self, *requests: Append | Delete) -> None:
        self.store.apply_requests(self.topic, 0, [(next(self._offsets), r) for r in requests])


@pytest.fixture
def store(redis: redis_lib.Redis) -> RedisStore:
    return RedisStore(redis)


@pytest.fixture
def plain(store: RedisStore, unique: str) -> Iterator[Writer]:
    """An unbucketed collection: two rows of r1 at time 3, after r2's were deleted at 2."""
    spec = CollectionSpec(f"http-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    writer = Writer(store, spec, f"t-{unique}")
    writer.append([(("r1", 0, True, 5), 1), (("r1", 1, False, None), 1), (("r2", 0, True, 7), 2)])
    writer.apply(Delete(spec.name, eq("replica_id", "r2"), "gone"))
    writer.append([(("r1", 0, True, 5), -1), (("r1", 0, True, 6), 1)])
    yield writer
    store.drop_collection(spec.name)


def replicas_of(bucket: int, count: int) -> list[str]:
    ids = (f"r{n}" for n in itertools.count())
    return list(itertools.islice((r for r in ids if bucket_of(r, BUCKETS) == bucket), count))


@pytest.fixture
def bucketed(store: RedisStore, unique: str) -> Iterator[Writer]:
    """A collection of four buckets, two replicas' rows in each, written as one group."""
    spec = CollectionSpec(f"http-b-{unique}", SCHEMA, ("replica_id",), buckets=BUCKETS)
    store.create_collection(spec)
    writer = Writer(store, spec, f"tb-{unique}")
    replicas = [r for bucket in range(BUCKETS) for r in replicas_of(bucket, 2)]
    writer.append([((r, w, True, None), 1) for r in replicas for w in range(2)])
    yield writer
    store.drop_collection(spec.name)


@pytest.fixture
def api(endpoints: devservices.Endpoints) -> Iterator[str]:
    """The URL of a ``serve`` with the default settings."""
    with served(endpoints.redis_url, endpoints.kafka_bootstrap) as service:
        yield service.url


def get(url: str, **kwargs: Any) -> requests.Response:
    return requests.get(url, timeout=30, **kwargs)


def problem(response: requests.Response, status: int, kind: str) -> dict[str, Any]:
    """The problem document of ``response``, checked to be of ``status`` and ``kind``."""
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"] == PROBLEM
    document = response.json()
    assert document["type"] == f"urn:collection-manager:problem:{kind}"
    assert document["status"] == status
    assert "Traceback" not in response.text
    return dict(document)


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, endpoints: devservices.Endpoints, tmp_path: Path
) -> None:
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))


# Collections


def test_collections_lists_and_shows_each_one_bucketed_ones_per_bucket(
    api: str, plain: Writer, bucketed: Writer
) -> None:
    listed = {c["name"]: c for c in get(f"{api}/api/v1/collections").json()["collections"]}
    one = listed[plain.spec.name]
    assert (one["rows"], one["time"], one["buckets"], one["bucket_column"]) == (2, 3, 1, None)
    assert one["indexed_columns"] == ["replica_id"]
    assert [(c["name"], c["type"], c["nullable"], c["indexed"]) for c in one["columns"]] == [
        ("replica_id", "string", False, True),
        ("worker_id", "long", False, False),
        ("hydrated", "boolean", False, False),
        ("count", "long", True, False),
    ]
    many = listed[bucketed.spec.name]
    assert (many["rows"], many["buckets"], many["bucket_column"]) == (16, 4, "replica_id")
    shown = get(f"{api}/api/v1/collections/{bucketed.spec.name}").json()
    assert [(b["bucket"], b["rows"]) for b in shown["bucket_rows"]] == [(b, 4) for b in range(4)]
    assert shown["counters"]["requests"] == 4  # a group of four parts
    assert get(f"{api}/api/v1/collections/{plain.spec.name}").json()["bucket_rows"] == []


# Rows


def test_rows_as_json_are_the_document_query_prints(
    api: str, plain: Writer, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    name = plain.spec.name
    answer = get(f"{api}/api/v1/collections/{name}/rows")
    assert answer.headers["Content-Type"] == "application/json"
    assert answer.json() == cli_json(capsys, "collections", "query", name)
    assert answer.json()["as_of"] == 3
    narrowed = get(f"{api}/api/v1/collections/{name}/rows", params={"where": ["worker_id>=1"]})
    assert narrowed.json() == cli_json(
        capsys, "collections", "query", name, "--where", "worker_id>=1"
    )
    both = {"where": ["replica_id=r1", "count!=null"]}
    rows = get(f"{api}/api/v1/collections/{name}/rows", params=both).json()["rows"]
    assert [r["row"]["count"] for r in rows] == [6]
    limited = get(f"{api}/api/v1/collections/{name}/rows", params={"limit": 1}).json()
    assert len(limited["rows"]) == 1


def test_rows_as_ndjson_and_arrow_hold_the_rows_json_holds(api: str, plain: Writer) -> None:
    url = f"{api}/api/v1/collections/{plain.spec.name}/rows"
    whole = get(url).json()
    expected = {json.dumps(r, sort_keys=True) for r in whole["rows"]}
    lines = get(url, headers={"Accept": NDJSON}).text.splitlines()
    assert json.loads(lines[0]) == {"collection": plain.spec.name, "as_of": 3}
    assert {json.dumps(json.loads(line), sort_keys=True) for line in lines[1:]} == expected
    arrow = get(url, headers={"Accept": ARROW})
    assert arrow.headers["Content-Type"] == ARROW
    table = pa.ipc.open_stream(io.BytesIO(arrow.content)).read_all()
    assert table.schema.metadata[b"as_of"] == b"3"
    assert table.schema.field("(count)").type == pa.int64()  # a column is named count
    got = {
        json.dumps({"count": r.pop("(count)"), "row": r}, sort_keys=True) for r in table.to_pylist()
    }
    assert got == expected
    # Preferences: the heaviest acceptable type wins.
    chosen = get(url, headers={"Accept": f"application/json;q=0.5, {NDJSON}"})
    assert chosen.headers["Content-Type"] == NDJSON


def test_rows_of_a_bucketed_collection_are_read_at_one_cut(
    api: str, bucketed: Writer, capsys: pytest.CaptureFixture[str], cli_env: None
) -> None:
    name = bucketed.spec.name
    answer = get(f"{api}/api/v1/collections/{name}/rows").json()
    assert isinstance(answer["as_of"], str) and len(answer["as_of"].split(",")) == BUCKETS
    assert len(answer["rows"]) == 16
    assert answer == cli_json(capsys, "collections", "query", name)
    one = replicas_of(2, 1)[0]
    pinned = get(f"{api}/api/v1/collections/{name}/rows", params={"where": f"replica_id={one}"})
    assert {r["row"]["replica_id"] for r in pinned.json()["rows"]} == {one}
    lines = get(f"{api}/api/v1/collections/{name}/rows", headers={"Accept": NDJSON}).text
    assert json.loads(lines.splitlines()[0])["as_of"] == answer["as_of"]


def test_json_holds_at_most_its_bound_of_rows_the_streams_any(
    endpoints: devservices.Endpoints, plain: Writer
) -> None:
    plain.append([(("r3", w, True, None), 1) for w in range(5)])  # 7 rows in all
    with served(endpoints.redis_url, http_max_rows=3) as service:
        url = f"{service.url}/api/v1/collections/{plain.spec.name}/rows"
        refused = problem(get(url), 422, "too-many-rows")
        assert refused["bound"] == 3 and "CM_HTTP_MAX_ROWS" in refused["detail"]
        assert NDJSON in refused["detail"] and "limit" in refused["detail"]
        asked = problem(get(url, params={"limit": 4}), 422, "too-many-rows")
        assert (asked["parameter"], asked["bound"]) == ("limit", 3)
        assert len(get(url, params={"limit": 3}).json()["rows"]) == 3
        assert len(get(url, headers={"Accept": NDJSON}).text.splitlines()) == 1 + 7
        filtered = get(url, params={"where": "replica_id=r1"})
        assert len(filtered.json()["rows"]) == 2  # within the bound


@pytest.mark.parametrize(
    ("path", "params", "headers", "status", "kind", "parameter", "says"),
    [
        ("/rows", {"where": "bad"}, {}, 400, "bad-parameter", "where", "COLUMN<op>VALUE"),
        ("/rows", {"where": "nope=1"}, {}, 400, "bad-parameter", "where", "unknown column"),
        ("/rows", {"where": "worker_id=x"}, {}, 400, "bad-parameter", "where", "integer"),
        ("/rows", {"where": "worker_id==1"}, {}, 400, "bad-parameter", "where", "did you mean"),
        ("/rows", {"limit": "0"}, {}, 400, "bad-parameter", "limit", "from 1"),
        ("/rows", {"limit": "many"}, {}, 400, "bad-parameter", "limit", "from 1"),
        ("/rows", {"limit": ["1", "2"]}, {}, 400, "bad-parameter", "limit", "give it once"),
        ("/rows", {"colour": "red"}, {}, 400, "bad-parameter", "colour", "takes: limit, where"),
        ("/rows", {}, {"Accept": "text/html"}, 406, "not-acceptable", "Accept", "x-ndjson"),
        ("/changes", {"since": "-1"}, {}, 400, "bad-parameter", "since", "a time"),
        ("/changes", {"since": "1,2"}, {}, 400, "bad-parameter", "since", "a time"),
        ("/changes", {}, {"Accept": NDJSON}, 406, "not-acceptable", "Accept", "event-stream"),
        ("", {"limit": "1"}, {}, 400, "bad-parameter", "limit", "no parameters"),
    ],
)
def test_bad_input_is_a_problem_naming_the_parameter(
    api: str,
    plain: Writer,
    path: str,
    params: dict[str, Any],
    headers: dict[str, str],
    status: int,
    kind: str,
    parameter: str,
    says: str,
) -> None:
    url = f"{api}/api/v1/collections/{plain.spec.name}{path}"
    found = problem(get(url, params=params, headers=headers), status, kind)
    assert found["parameter"] == parameter
    assert says in found["detail"]
    assert found["instance"] == f"/api/v1/collections/{plain.spec.name}{path}"


def test_unknown_collections_and_paths_are_404_naming_what_there_is(
    api: str, plain: Writer, bucketed: Writer
) -> None:
    for path in ("", "/rows", "/changes"):
        found = problem(get(f"{api}/api/v1/collections/no-such{path}"), 404, "unknown-collection")
        assert plain.spec.name in found["detail"] and found["parameter"] == "name"
    bad_name = problem(get(f"{api}/api/v1/collections/a%23b/rows"), 404, "unknown-collection")
    assert "a#b" in bad_name["detail"]
    nowhere = problem(get(f"{api}/api/v1/nothing"), 404, "not-found")
    assert "/api/v1/openapi.json" in nowhere["detail"]
    cut = problem(
        get(f"{api}/api/v1/collections/{bucketed.spec.name}/changes", params={"since": "3"}),
        400,
        "bad-parameter",
    )
    assert "4 buckets" in cut["detail"] and "12,40,7" not in cut["detail"]


def test_the_api_is_read_only(api: str, plain: Writer) -> None:
    url = f"{api}/api/v1/collections/{plain.spec.name}/rows"
    for method in ("POST", "PUT", "PATCH", "DELETE", "OPTIONS"):
        answer = requests.request(method, url, data=b"{}", timeout=30)
        refused = problem(answer, 405, "method-not-allowed")
        assert answer.headers["Allow"] == "GET, HEAD"
        assert method in refused["detail"]
    head = requests.head(url, timeout=30)
    assert (head.status_code, head.content) == (200, b"")
    assert int(head.headers["Content-Length"]) == len(get(url).content)
    assert store_rows(plain) == 2  # nothing was written


def store_rows(writer: Writer) -> int:
    return writer.store.size(writer.spec.name)[0]


# Limits


def test_a_read_past_its_time_is_504_and_holds_its_slot_until_it_ends(
    endpoints: devservices.Endpoints, plain: Writer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read is held back until the test lets it go: the request gives up at its
    deadline (504), and the read's slot stays taken until the read ends (503)."""
    release = threading.Event()
    reading = RedisStore.stepped_snapshot

    def held(self: RedisStore, *args: Any, **kwargs: Any) -> Any:
        release.wait(60)
        return reading(self, *args, **kwargs)

    monkeypatch.setattr(RedisStore, "stepped_snapshot", held)
    settings = {"http_request_timeout_s": 0.5, "http_max_requests": 1}
    with served(endpoints.redis_url, **settings) as service:
        url = f"{service.url}/api/v1/collections/{plain.spec.name}/rows"
        late = problem(get(url), 504, "timeout")
        assert late["bound"] == 0.5 and "CM_HTTP_REQUEST_TIMEOUT_S=0.5" in late["detail"]
        busy = problem(get(f"{service.url}/api/v1/collections"), 503, "too-many-requests")
        assert busy["bound"] == 1 and "CM_HTTP_MAX_REQUESTS=1" in busy["detail"]
        release.set()
        assert_eventually(lambda: _ok(get(f"{service.url}/api/v1/collections")))


def _ok(response: requests.Response) -> None:
    assert response.status_code == 200, response.text


def test_streams_past_their_bound_are_refused_naming_it(
    endpoints: devservices.Endpoints, plain: Writer
) -> None:
    # Keep-alives often: a stream whose client left is noticed at its next writes.
    with served(endpoints.redis_url, http_max_streams=1, http_keepalive_s=0.2) as service:
        url = f"{service.url}/api/v1/collections/{plain.spec.name}/changes"
        first = EventReader(requests.get(url, stream=True, timeout=30))
        assert first.next().kind == "position"
        refused = problem(get(url), 503, "too-many-streams")
        assert refused["bound"] == 1 and "CM_HTTP_MAX_STREAMS=1" in refused["detail"]
        assert refused["instance"].endswith("/changes")
        _ok(get(f"{service.url}/api/v1/collections"))  # other answers have their own slots
        first.close()  # the server notices at its next writes: keep-alives at the latest

        def second() -> None:
            answer = requests.get(url, stream=True, timeout=30)
            try:
                assert answer.status_code == 200
            finally:
                answer.close()

        assert_eventually(second, timeout=60, interval=0.5)


# Auth, TLS, CORS


def test_a_token_is_asked_for_and_never_echoed(
    endpoints: devservices.Endpoints, plain: Writer, caplog: pytest.LogCaptureFixture
) -> None:
    token, wrong = "s3cret-token-for-the-test", "wrong-token-sent-by-the-test"
    caplog.set_level(logging.DEBUG)
    with served(endpoints.redis_url, http_token=token) as service:
        url = f"{service.url}/api/v1/collections/{plain.spec.name}/rows"
        missing = get(url)
        problem(missing, 401, "unauthorized")
        assert missing.headers["WWW-Authenticate"] == 'Bearer realm="collection-manager"'
        refused = get(url, headers={"Authorization": f"Bearer {wrong}"})
        problem(refused, 401, "unauthorized")
        assert 'error="invalid_token"' in refused.headers["WWW-Authenticate"]
        assert wrong not in refused.text and token not in refused.text
        problem(get(url, headers={"Authorization": f"Basic {token}"}), 401, "unauthorized")
        allowed = get(url, headers={"Authorization": f"Bearer {token}"})
        assert allowed.status_code == 200 and allowed.json()["as_of"] == 3
        assert get(f"{service.url}/healthz").status_code == 200  # probes need none
        document = get(
            f"{service.url}/api/v1/openapi.json", headers={"Authorization": f"Bearer {token}"}
        ).json()
        assert document["security"] == [{"bearer": []}]
    assert token not in caplog.text and wrong not in caplog.text


def test_tls_serves_https_with_the_certificate_given(
    endpoints: devservices.Endpoints, plain: Writer, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    settings = {"http_tls_cert_file": cert, "http_tls_key_file": key}
    with served(endpoints.redis_url, **settings) as service:
        assert service.url.startswith("https://")
        url = f"{service.url}/api/v1/collections/{plain.spec.name}/rows"
        assert get(url, verify=str(cert)).json()["as_of"] == 3
        with pytest.raises(requests.exceptions.SSLError):
            get(url)  # a certificate no CA of the client's signed
        with pytest.raises(requests.exceptions.ConnectionError):
            get(url.replace("https://", "http://"))  # no plain HTTP beside it


def test_cors_is_off_unless_origins_are_set(
    endpoints: devservices.Endpoints, plain: Writer, api: str
) -> None:
    url = f"/api/v1/collections/{plain.spec.name}/rows"
    origin = {"Origin": "https://ops.example.com"}
    assert "Access-Control-Allow-Origin" not in get(api + url, headers=origin).headers
    with served(endpoints.redis_url, http_cors_origins="https://ops.example.com") as service:
        answer = get(service.url + url, headers=origin)
        assert answer.headers["Access-Control-Allow-Origin"] == "https://ops.example.com"
        other = get(service.url + url, headers={"Origin": "https://elsewhere.example.com"})
        assert "Access-Control-Allow-Origin" not in other.headers
        preflight = requests.options(
            service.url + url,
            headers={**origin, "Access-Control-Request-Method": "GET"},
            timeout=30,
        )
        assert preflight.status_code == 204
        assert "Authorization" in preflight.headers["Access-Control-Allow-Headers"]
        assert preflight.headers["Access-Control-Allow-Methods"] == "GET, HEAD"


# Change streams


def changes_of(events: list[Any]) -> list[tuple[Any, ...]]:
    return [
        (c.get("bucket"), c["time"], json.dumps(c["row"], sort_keys=True), c["diff"])
        for e in events
        for c in e.data["changes"]
    ]


def test_a_stream_resumed_with_its_last_id_delivers_each_change_once(
    api: str, plain: Writer
) -> None:
    """A client reads some changes, goes away while more are written, and comes back with
    the id of the last event it got: it gets the rest, none twice, none lost."""
    url = f"{api}/api/v1/collections/{plain.spec.name}/changes"
    reader = EventReader(requests.get(url, params={"since": 0}, stream=True, timeout=30))
    start = reader.next()
    assert (start.kind, start.id, start.data) == ("position", "0", {"as_of": 0})
    seen = [reader.next()]  # the first time's changes: at least one event
    last = seen[-1].id
    reader.close()
    for worker in range(3):  # written while nobody listens
        plain.append([(("r9", worker, True, worker), 1)])
    plain.apply(Delete(plain.spec.name, eq("replica_id", "r9"), "gone again"))
    headers = {"Last-Event-ID": last}
    # The URL as the client began it: Last-Event-ID wins over since.
    resumed = EventReader(
        requests.get(url, params={"since": 0}, headers=headers, stream=True, timeout=30)
    )
    assert resumed.next() == Event("position", last, {"as_of": int(str(last))})
    end = plain.store.size(plain.spec.name)[1]

    def caught_up() -> None:
        seen.append(resumed.next())
        assert seen[-1].kind == "changes" and seen[-1].id == str(end)

    assert_eventually(caught_up, timeout=30, interval=0)
    resumed.close()
    expected = [
        (
            None,
            e.time,
            json.dumps(dict(zip(plain.spec.column_names, e.row, strict=True)), sort_keys=True),
            e.diff,
        )
        for e in plain.store.reader.tail(plain.spec.name, 0)
    ]
    assert changes_of(seen) == expected
    assert [e.data["as_of"] for e in seen] == [int(str(e.id)) for e in seen]


def test_a_stream_follows_new_changes_and_ends_when_the_collection_is_dropped(
    api: str, store: RedisStore, unique: str
) -> None:
    spec = CollectionSpec(f"http-drop-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    writer = Writer(store, spec, f"td-{unique}")
    writer.append([(("r1", 0, True, 1), 1)])
    reader = EventReader(
        requests.get(f"{api}/api/v1/collections/{spec.name}/changes", stream=True, timeout=30)
    )
    assert reader.next().data == {"as_of": 1}  # now: only what comes after
    writer.append([(("r1", 0, True, 1), -1), (("r1", 0, True, 2), 1)])
    event = reader.next()
    assert (event.kind, event.id) == ("changes", "2")
    assert [(c["row"]["count"], c["diff"]) for c in event.data["changes"]] == [(1, -1), (2, 1)]
    store.drop_collection(spec.name)
    ended = reader.next()
    assert ended.kind == "error"
    assert ended.data["type"] == "urn:collection-manager:problem:unknown-collection"
    with pytest.raises((EOFError, requests.exceptions.ChunkedEncodingError)):
        reader.next()


def test_a_bucketed_collections_stream_goes_from_cut_to_cut(api: str, bucketed: Writer) -> None:
    """Events of a bucketed collection carry the cut they reach; resumed from one, the
    stream goes on after it; a group of parts comes whole, in one event."""
    name = bucketed.spec.name
    url = f"{api}/api/v1/collections/{name}/changes"
    reader = EventReader(requests.get(url, params={"since": "0"}, stream=True, timeout=30))
    assert reader.next().data == {"as_of": "0,0,0,0"}
    first = reader.next()
    assert first.kind == "changes" and first.id == first.data["as_of"]
    assert len(first.data["changes"]) == 16  # the group whole
    assert {c["bucket"] for c in first.data["changes"]} == set(range(BUCKETS))
    reader.close()
    rows = get(f"{api}/api/v1/collections/{name}/rows").json()
    assert rows["as_of"] == first.id  # the rows' cut is where the stream stood
    one, other = replicas_of(0, 1)[0], replicas_of(3, 1)[0]
    bucketed.append([((one, 9, False, 1), 1), ((other, 9, False, 1), 1)])  # a group of two
    resumed = EventReader(
        requests.get(url, headers={"Last-Event-ID": str(first.id)}, stream=True, timeout=30)
    )
    assert resumed.next().id == first.id
    more = resumed.next()
    resumed.close()
    got = sorted((c["bucket"], c["row"]["replica_id"], c["diff"]) for c in more.data["changes"])
    assert got == [(0, one, 1), (3, other, 1)]
    later, earlier = str(more.id).split(","), str(first.id).split(",")
    assert all(int(a) >= int(b) for a, b in zip(later, earlier, strict=True))


def test_a_stream_from_a_position_the_log_no_longer_holds_is_410(
    api: str, redis: redis_lib.Redis, unique: str
) -> None:
    store = RedisStore(redis, log_max_length=1)
    spec = CollectionSpec(f"http-trim-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    try:
        writer = Writer(store, spec, f"tt-{unique}")
        for step in range(300):  # XADD MAXLEN ~ trims whole nodes of 100 entries
            writer.append([(("r1", 0, True, step), 1)])
        gone = problem(
            get(f"{api}/api/v1/collections/{spec.name}/changes", params={"since": 0}),
            410,
            "log-trimmed",
        )
        assert gone["parameter"] == "since" and "/rows" in gone["detail"]
        now = EventReader(
            requests.get(f"{api}/api/v1/collections/{spec.name}/changes", stream=True, timeout=30)
        )
        assert now.next().data == {"as_of": 300}
        now.close()
    finally:
        store.drop_collection(spec.name)


# Replicas and status


def a_live_and_a_removed_replica(endpoints: devservices.Endpoints, unique: str, topic: str) -> str:
    """Replica ``{unique}-a`` active and ``{unique}-b`` removed, in a namespace of the test's
    own; that namespace."""
    namespace = f"cm:replicas:{unique}"
    config = ReplicaConfig(replica_namespace=namespace)
    controller = Controller.connect(endpoints.kafka_bootstrap, endpoints.redis_url, topic, config)
    try:
        controller.add_replica(f"{unique}-a")
        controller.add_replica(f"{unique}-b")
        controller.remove_replica(f"{unique}-b", "removed by the test")
    finally:
        controller.close()
    return namespace


def test_replicas_shows_what_replicas_shows_and_the_lease_left(
    endpoints: devservices.Endpoints, unique: str, topic: str
) -> None:
    namespace = a_live_and_a_removed_replica(endpoints, unique, topic)
    with served(endpoints.redis_url, namespace=namespace) as service:
        live = get(f"{service.url}/api/v1/replicas").json()
        assert live["namespace"] == namespace
        [only] = live["replicas"]
        assert (only["replica_id"], only["epoch"], only["state"]) == (f"{unique}-a", 1, "active")
        assert only["lease_left_ms"] == only["lease_expires_ms"] - live["at_ms"]
        every = get(f"{service.url}/api/v1/replicas", params={"all": "true"}).json()["replicas"]
        assert [(r["state"], r["reason"], r["lease_left_ms"]) for r in every][1] == (
            "removed",
            "removed by the test",
            None,
        )
        problem(
            get(f"{service.url}/api/v1/replicas", params={"all": "maybe"}), 400, "bad-parameter"
        )


def test_status_shows_the_consumer_and_never_a_dead_one_running(
    endpoints: devservices.Endpoints, redis: redis_lib.Redis, topic: str, plain: Writer
) -> None:
    record_batch(endpoints.redis_url, topic, BatchMetrics(7, {}, 2, 1, {0: 0}))
    heartbeat = Heartbeat(endpoints.redis_url, CONSUMER, topic).start()
    try:
        assert_eventually(lambda: _exists(redis, alive_key(CONSUMER, topic)), timeout=10)
        with served(endpoints.redis_url, endpoints.kafka_bootstrap, topic=topic) as service:
            status = get(f"{service.url}/api/v1/status").json()
            consumer = status["consumer"]
            assert (consumer["topic"], consumer["state"], consumer["kafka"]) == (
                topic,
                "running",
                "reachable",
            )
            assert (consumer["batches"], consumer["dead_letters"]) == (1, 2)
            assert plain.spec.name in {c["name"] for c in status["collections"]}
            heartbeat.stop()  # a clean stop deletes its key: stopped at once
            stopped = get(f"{service.url}/api/v1/status").json()["consumer"]
            assert stopped["state"] == "stopped"
            other = get(f"{service.url}/api/v1/status", params={"topic": "no.such.topic"})
            assert other.json()["consumer"]["state"] == "unknown"
            problem(
                get(f"{service.url}/api/v1/status", params={"topic": "a b"}), 400, "bad-parameter"
            )
    finally:
        heartbeat.stop()
        redis.delete(consumer_key(topic), beat_key(CONSUMER, topic))


def _exists(redis: redis_lib.Redis, key: str) -> None:
    assert redis.exists(key)


# The process


def test_metrics_and_health_are_served_beside_the_api(api: str, plain: Writer) -> None:
    get(f"{api}/api/v1/collections/{plain.spec.name}/rows")
    get(f"{api}/api/v1/collections/{plain.spec.name}/rows", params={"limit": "x"})
    text = get(f"{api}/metrics").text
    route = "/api/v1/collections/{name}/rows"
    assert f'cm_http_requests_total{{code="200",method="GET",route="{route}"}}' in text
    assert f'cm_http_errors_total{{problem="bad-parameter",route="{route}"}}' in text
    assert "cm_http_streams_open" in text and "cm_http_request_duration_seconds_bucket" in text
    assert get(f"{api}/healthz").text == "ok\n"
    assert get(f"{api}/readyz").text == "ok\n"


def test_serve_runs_until_sigterm_and_refuses_a_wide_address_without_a_token(
    endpoints: devservices.Endpoints, tmp_path: Path
) -> None:
    env = {
        "PATH": "/usr/bin:/bin",
        "CM_REDIS_URL": endpoints.redis_url,
        "CM_STATE_DIR": str(tmp_path / "state"),
        "CM_HTTP_ADDRESS": "127.0.0.1:0",
    }
    command = [str(Path(sys.executable).with_name("collection-manager")), "server", "run"]
    server = subprocess.Popen(
        command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        line = server.stdout.readline()
        assert line.startswith("serving the HTTP API and console at http://127.0.0.1:"), line
        url = line.split()[7].removesuffix("/")
        assert get(f"{url}/readyz").text == "ok\n"
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=30) == 0
        assert server.stderr is not None and server.stderr.read() == ""
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
    wide = subprocess.run(
        command,
        env={**env, "CM_HTTP_ADDRESS": "0.0.0.0:0"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert wide.returncode == 1
    assert wide.stderr.startswith("error: CM_HTTP_ADDRESS=0.0.0.0:0 listens beyond loopback")
    assert "CM_HTTP_TOKEN" in wide.stderr and len(wide.stderr.splitlines()) == 1


def test_a_feed_reads_the_next_changes_only_when_its_client_takes_the_last(
    endpoints: devservices.Endpoints,
    redis: redis_lib.Redis,
    plain: Writer,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Back-pressure: the stream is a generator the server pulls only once its last write
    went out (a write blocks while the client reads nothing), so a client that takes two
    events of a long catch-up has made the feed read two events' worth of the log, not
    all of it; the rest comes, in order and whole, as it reads on."""
    monkeypatch.setattr(changes, "EVENT_CHANGES", 5)
    for step in range(60):  # 60 more times, one change each
        plain.append([(("r5", step, True, step), 1)])
    end = plain.store.size(plain.spec.name)[1]
    sources = Sources(redis, endpoints.redis_url, None, "cm.requests", "cm:replicas")
    call = Call(sources, HttpConfig(), Deadline(30, "CM_HTTP_REQUEST_TIMEOUT_S"))
    feed = changes.Feed(call, plain.spec, redis.hget(CATALOG, plain.spec.name), 0)
    events = feed.events()
    taken = [next(events) for _ in range(4)]  # retry, position, two events of changes
    assert taken[1].startswith(b"id: 0\n")
    assert 0 < feed.position < end  # it read no further than what was taken
    rest = []
    while feed.position < end:
        rest.append(next(events))
    events.close()
    times = [
        change["time"]
        for event in taken[2:] + rest
        for change in json.loads(event.split(b"data: ", 1)[1])["changes"]
    ]
    assert times == [e.time for e in plain.store.reader.tail(plain.spec.name, 0)]
