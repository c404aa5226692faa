"""The Python client (collection_manager/client) against a real ``serve`` on the session's
Redis: rows as ``collections query`` prints them, Arrow holding the same, typed errors
naming parameter and bound, the token and TLS, the replicas, and a change feed cut
mid-stream by a proxy that resumes and hands on each change once.

Collections are written as the consumer would (``test_http_api.Writer``: the store's apply,
no Kafka or Spark), each test's own, and each test has its own ``serve`` on a free
loopback port, so the file takes seconds beside the other tests.
"""

from __future__ import annotations

import json
import logging
import socket
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager import devservices
from collection_manager.client import (
    BadRequest,
    Client,
    ConnectionFailed,
    Row,
    Unauthorized,
    UnknownCollection,
)
from collection_manager.core.filters import eq
from collection_manager.core.requests import Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from tests.integration.http_service import self_signed, served
from tests.integration.tcp_proxy import TcpProxy
from tests.integration.test_http_api import (
    SCHEMA,
    Writer,
    a_live_and_a_removed_replica,
    cli_json,
    replicas_of,
)

# 2^53 - 1: the most rows a streamed read's limit may ask for (http/rows.py's MAX_LIMIT).
MAX_LIMIT = 2**53 - 1


@pytest.fixture
def api(endpoints: devservices.Endpoints) -> Iterator[str]:
    """The URL of a ``serve`` with the default settings."""
    with served(endpoints.redis_url, endpoints.kafka_bootstrap) as service:
        yield service.url


@pytest.fixture
def store(redis: redis_lib.Redis) -> RedisStore:
    return RedisStore(redis)


@pytest.fixture
def plain(store: RedisStore, unique: str) -> Iterator[Writer]:
    """An unbucketed collection at time 3: r1's rows (one replaced), r2's deleted, and
    text that needs UTF-8."""
    spec = CollectionSpec(f"client-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    writer = Writer(store, spec, f"tc-{unique}")
    writer.append([(("r1", 0, True, 5), 1), (("r1", 1, False, None), 1), (("r2", 0, True, 7), 2)])
    writer.apply(Delete(spec.name, eq("replica_id", "r2"), "gone"))
    writer.append([(("r1", 0, True, 5), -1), (("r1", 0, True, 6), 1), (("rè", 2, True, 0), 3)])
    yield writer
    store.drop_collection(spec.name)


@pytest.fixture
def bucketed(store: RedisStore, unique: str) -> Iterator[Writer]:
    """A collection of four buckets, two replicas' rows in each, written as one group."""
    spec = CollectionSpec(f"client-b-{unique}", SCHEMA, ("replica_id",), buckets=4)
    store.create_collection(spec)
    writer = Writer(store, spec, f"tcb-{unique}")
    replicas = [r for bucket in range(4) for r in replicas_of(bucket, 2)]
    writer.append([((r, w, True, None), 1) for r in replicas for w in range(2)])
    yield writer
    store.drop_collection(spec.name)


@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, endpoints: devservices.Endpoints, tmp_path: Path
) -> None:
    """``collections query`` run in the test's process reads the session's Redis."""
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))


def as_query(rows: list[Row]) -> list[dict[str, Any]]:
    """Rows as ``collections query --format json`` lists them: by value."""
    listed = [{"row": row.values, "count": row.count} for row in rows]
    return sorted(listed, key=lambda r: json.dumps(r, sort_keys=True))


def query_rows(document: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(document["rows"], key=lambda r: json.dumps(r, sort_keys=True))


def test_rows_are_what_query_prints_at_the_same_as_of(
    api: str,
    plain: Writer,
    bucketed: Writer,
    capsys: pytest.CaptureFixture[str],
    cli_env: None,
) -> None:
    with Client(api) as client:
        for writer in (plain, bucketed):
            name = writer.spec.name
            printed = cli_json(capsys, "collections", "query", name)
            with client.rows(name) as rows:
                assert (rows.collection, rows.as_of) == (name, printed["as_of"])
                assert as_query(list(rows)) == query_rows(printed)
            assert rows.columns == ("replica_id", "worker_id", "hydrated", "count")
        name = plain.spec.name
        for where in ("worker_id>=1", ["replica_id=r1", "count!=null"]):
            terms = [where] if isinstance(where, str) else where
            flags = [arg for term in terms for arg in ("--where", term)]
            printed = cli_json(capsys, "collections", "query", name, *flags)
            assert as_query(client.rows(name, where=where).rows) == query_rows(printed)
        assert len(client.rows(name, limit=1).rows) == 1
        assert isinstance(bucketed_as_of := client.rows(bucketed.spec.name).as_of, str)
        assert len(bucketed_as_of.split(",")) == bucketed.spec.buckets


def test_an_arrow_table_holds_the_python_rows(api: str, plain: Writer, bucketed: Writer) -> None:
    with Client(api) as client:
        for writer in (plain, bucketed):
            name = writer.spec.name
            rows = client.rows(name)
            table = client.rows_arrow(name)
            assert table.schema.metadata[b"as_of"] == str(rows.as_of).encode()
            assert table.column_names == [*rows.columns, "(count)"]  # a column is named count
            arrow = [Row(r, r.pop("(count)")) for r in table.to_pylist()]
            assert as_query(arrow) == as_query(rows.rows)
        narrowed = client.rows_arrow(plain.spec.name, where="worker_id>=1", limit=1)
        assert narrowed.num_rows == 1 and narrowed.column("worker_id").to_pylist()[0] >= 1


def test_the_catalog_is_read_as_the_store_holds_it(
    api: str, plain: Writer, bucketed: Writer, store: RedisStore
) -> None:
    with Client(api) as client:
        listed = {c.name: c for c in client.collections()}
        one = listed[plain.spec.name]
        assert (one.rows, one.time, one.buckets, one.bucket_column) == (3, 3, 1, None)
        assert [c.name for c in one.columns if c.indexed] == ["replica_id"]
        detail = client.collection(bucketed.spec.name)
        assert detail.bucket_column == "replica_id" and len(detail.bucket_rows) == 4
        # What a producer routes by, with no Redis of its own.
        assert detail.spec() == store.spec(bucketed.spec.name)


def test_refusals_are_typed_errors_naming_parameter_and_bound(api: str, plain: Writer) -> None:
    name = plain.spec.name
    with Client(api) as client:
        with pytest.raises(BadRequest) as too_many_terms:
            client.rows(name, where=["worker_id>=0"] * 33)
        assert (too_many_terms.value.parameter, too_many_terms.value.bound) == ("where", 32)
        assert too_many_terms.value.kind == "bad-parameter" and too_many_terms.value.status == 400
        with pytest.raises(BadRequest) as too_large:
            client.rows(name, limit=MAX_LIMIT + 1)
        assert (too_large.value.parameter, too_large.value.bound) == ("limit", MAX_LIMIT)
        with pytest.raises(BadRequest, match="unknown column") as no_column:
            client.rows(name, where="nope=1")
        assert no_column.value.parameter == "where"
        with pytest.raises(UnknownCollection) as unknown:
            client.rows("no-such-collection")
        assert unknown.value.parameter == "name" and name in unknown.value.detail
        with pytest.raises(UnknownCollection):
            next(client.changes("no-such-collection", retries=0))
        # The client keeps working after each refusal.
        assert client.collection(name).rows == 3


def test_a_token_is_sent_and_a_missing_one_is_unauthorized(
    endpoints: devservices.Endpoints, plain: Writer
) -> None:
    token = "s3cret-token-of-the-client-test"
    with served(endpoints.redis_url, http_token=token) as service:
        with pytest.raises(Unauthorized) as missing:
            Client(service.url).rows(plain.spec.name)
        assert missing.value.parameter == "Authorization" and token not in str(missing.value)
        with pytest.raises(Unauthorized):
            Client(service.url, token="wrong").collections()
        with Client(service.url, token=token) as client:
            assert client.rows(plain.spec.name).as_of == 3
            assert token not in repr(client)


def test_tls_with_the_servers_ca_and_a_clear_error_without_it(
    endpoints: devservices.Endpoints, plain: Writer, tmp_path: Path
) -> None:
    cert, key = self_signed(tmp_path)
    settings = {"http_tls_cert_file": cert, "http_tls_key_file": key}
    with served(endpoints.redis_url, **settings) as service:
        with Client(service.url, tls=cert) as client:
            assert client.rows(plain.spec.name).as_of == 3
        with pytest.raises(ConnectionFailed, match="certificate verify failed") as untrusted:
            Client(service.url).collections()
        assert untrusted.value.url == f"{service.url}/api/v1/collections"
        with pytest.raises(ConnectionFailed):
            Client(service.url.replace("https://", "http://")).collections()


def test_a_server_that_is_not_there_is_one_error_naming_its_url() -> None:
    with socket.create_server(("127.0.0.1", 0)) as listener:  # a port nothing listens on
        url = f"http://127.0.0.1:{listener.getsockname()[1]}"
    with pytest.raises(ConnectionFailed) as refused:
        Client(url).rows("compute_frontiers", where="secret=1")
    assert str(refused.value) == (
        f"cannot read {url}/api/v1/collections/compute_frontiers/rows: Connection refused "
        "[collection=compute_frontiers]"
    )


def test_replicas_and_status(endpoints: devservices.Endpoints, unique: str, topic: str) -> None:
    namespace = a_live_and_a_removed_replica(endpoints, unique, topic)
    with served(endpoints.redis_url, namespace=namespace, topic=topic) as service:
        client = Client(service.url)
        [live] = client.replicas()
        assert (live.replica_id, live.epoch, live.state) == (f"{unique}-a", 1, "active")
        assert live.lease_left_ms is not None and live.lease_left_ms > 0
        every = client.replicas(include_removed=True)
        assert [(r.state, r.reason) for r in every][1] == ("removed", "removed by the test")
        status = client.status()
        assert status.controller is not None
        assert (status.consumer.topic, status.controller.namespace) == (topic, namespace)
        assert client.status(topic="no.such.topic").consumer.state == "unknown"


# The change feed


def logged(store: RedisStore, spec: CollectionSpec) -> list[tuple[int, str, int]]:
    """Every change of the collection's log, as (time, row, diff)."""
    return [
        (
            e.time,
            json.dumps(dict(zip(spec.column_names, e.row, strict=True)), sort_keys=True),
            e.diff,
        )
        for e in store.reader.tail(spec.name, 0)
    ]


@pytest.mark.timeout(180)
def test_a_feed_cut_mid_stream_resumes_and_hands_on_each_change_once(
    endpoints: devservices.Endpoints,
    store: RedisStore,
    unique: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Ten times written one by one, read through a proxy that cuts the answer in the
    middle of an event once, and drops every connection once: the feed reconnects with the
    last id it handed on and delivers what the log holds, each change once, in order."""
    spec = CollectionSpec(f"client-feed-{unique}", SCHEMA, ("replica_id",))
    store.create_collection(spec)
    writer = Writer(store, spec, f"tc-{unique}")
    writes = 10
    got = []
    caplog.set_level(logging.INFO, logger="collection_manager.client.feed")
    try:
        with served(endpoints.redis_url) as service:
            server = urllib.parse.urlsplit(service.url)
            assert server.hostname is not None and server.port is not None
            with TcpProxy(server.hostname, server.port) as proxy:
                client = Client(f"http://127.0.0.1:{proxy.port}")
                with client.changes(spec.name, since=0, until=writes, backoff=0.05) as feed:
                    for write in range(writes):
                        if write == 3:
                            proxy.cut_after(20)  # the chunk's size line and a part of its event
                        if write == 6:
                            proxy.drop_all()
                        writer.append([(("r1", write, True, write), 1)])
                        while int(feed.position or 0) < write + 1:
                            got.append(next(feed))
                    assert list(feed) == []  # until reached: the feed ends
                assert proxy.connections == 3 and feed.resume.reconnects == 2
        # Both answers broke off (mid-event, then between two chunks): none ended cleanly.
        assert sum("cut short" in r.getMessage() for r in caplog.records) == 2
        expected = logged(store, spec)
    finally:
        store.drop_collection(spec.name)
    delivered = [
        (c.time, json.dumps(c.row, sort_keys=True), c.diff) for event in got for c in event.changes
    ]
    assert len(expected) == writes and delivered == expected
    assert [event.position for event in got] == [str(event.as_of) for event in got]


def test_a_bucketed_feed_from_the_start_to_a_reads_cut_holds_its_rows(
    api: str, bucketed: Writer
) -> None:
    with Client(api) as client:
        rows = client.rows(bucketed.spec.name).rows
        cut = client.rows(bucketed.spec.name, limit=1).as_of
        events = list(client.changes(bucketed.spec.name, since=0, until=cut))
    assert events[-1].position == cut
    changes = [c for event in events for c in event.changes]
    assert {c.bucket for c in changes} == set(range(bucketed.spec.buckets))
    assert as_query([Row(c.row, c.diff) for c in changes]) == as_query(rows)
