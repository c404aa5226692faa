"""A hash that shrinks under a scan, on the real server: SCAN returns elements again, and a
streamed read hands on each row once all the same (``core/scan_order.py``).

Made all but certain by choosing the moment (a try that shows nothing is made again): the
table is grown to ``2**17`` buckets and its rehash finished; the scan is stepped until its
cursor stands at least 16 buckets into a group of the buckets the shrunk table will merge;
then every element but those the last step returned is deleted, and one more delete shrinks
the table to the next power of two at or above what is left. The next step starts at that
group's first bucket, and returns again the elements of its buckets already passed.
"""

from __future__ import annotations

import collections
import io
import itertools
import json
from collections.abc import Iterable

import pyarrow as pa
import pytest
import redis as redis_lib
import requests

from collection_manager import devservices
from collection_manager.core.filters import in_, not_
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.core.stepped_read import ScanStep
from collection_manager.storage.client import as_text
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.step_reads import ReadPart, RedisStepReads
from collection_manager.storage.store import RedisStore
from collection_manager.storage.streamed import stream_rows
from tests.integration.http_service import served
from tests.support import assert_eventually

# The topic the requests say they came from: one no consumer or timer of another test
# reads (a retraction timer prepares the collections its topic wrote).
TOPIC = "scan-repeats"
ELEMENTS = 120_000  # past 2**16: the table grows to 2**17 buckets, short of growing again
TABLE_BITS = 17
SCHEMA = {
    "type": "record",
    "name": "shrinking",
    "fields": [{"name": "k", "type": "string"}, {"name": "n", "type": "long"}],
}


def _place(cursor: int, bits: int) -> int:
    """The cursor's bucket in the order the scan visits a table's ``2**bits`` buckets."""
    return int(f"{cursor:0{bits}b}"[::-1], 2)


def _deep_in_a_group(cursor: int, left: int, bits: int = TABLE_BITS) -> bool:
    """Whether ``cursor`` stands 16 buckets or more into a group of the buckets that a
    table shrunk for ``left`` elements merges into one of its own."""
    group = 1 << (bits - max(2, (left - 1).bit_length()))
    return _place(cursor, bits) % group >= 16


def _lookups(client: redis_lib.Redis, key: str, times: int) -> None:
    """Each lookup moves a rehash in progress on by a bucket: ``times`` of them end it."""
    with client.pipeline(transaction=False) as pipe:
        for start in range(0, times, 5_000):
            for _ in range(min(5_000, times - start)):
                pipe.hexists(key, "-")
            pipe.execute()


def _no_fork(client: redis_lib.Redis) -> None:
    """Waits until Redis has no child (an AOF rewrite, a background save): while one runs,
    Redis resizes no table, and the shrink would come at a later delete."""

    def idle() -> None:
        persistence = client.info("persistence")
        assert not persistence["aof_rewrite_in_progress"], persistence
        assert not persistence["rdb_bgsave_in_progress"], persistence

    assert_eventually(idle, timeout=120, interval=0.1)


def _fill(client: redis_lib.Redis, key: str) -> None:
    with client.pipeline(transaction=False) as pipe:
        for start in range(0, ELEMENTS, 5_000):
            pipe.hset(key, mapping={f"f{i}": 1 for i in range(start, start + 5_000)})
        pipe.execute()
    _lookups(client, key, 1 << TABLE_BITS)


def _chunks(items: list[str], size: int) -> Iterable[list[str]]:
    for start in range(0, len(items), size):
        yield items[start : start + size]


def _scan_through_a_shrink(client: redis_lib.Redis, key: str) -> tuple[set[str], set[str]]:
    """The fields one scan returned before the shrink, and after it."""
    _fill(client, key)
    seen: list[str] = []
    cursor = 0
    while True:
        cursor, found = client.hscan(key, cursor, count=1_000)
        fields = [as_text(field) for field in found]
        seen += fields
        if _deep_in_a_group(cursor, len(fields)):
            break
    kept = set(fields)
    doomed = [f"f{i}" for i in range(ELEMENTS) if f"f{i}" not in kept]
    for chunk in _chunks(doomed, 5_000):
        client.hdel(key, *chunk)
    _lookups(client, key, 1 << TABLE_BITS)  # a shrink's rehash ends ...
    _no_fork(client)
    client.hset(key, "extra", 1)
    client.hdel(key, "extra")  # ... and the next delete shrinks it to what is left
    rest: list[str] = []
    while cursor:
        cursor, found = client.hscan(key, cursor, count=1_000)
        rest += [as_text(field) for field in found]
    assert set(rest) <= kept
    return set(seen), set(rest)


def test_a_hash_that_shrinks_between_two_hscans_returns_elements_again(
    redis: redis_lib.Redis, unique: str
) -> None:
    # What is shown is that a shrink can return elements again: one try of three that does
    # shows it. In two fresh-clone runs of 2026-12-03 a single try, on the session's shared
    # Redis, returned nothing again, once with no fork meanwhile; not explained yet.
    again: list[set[str]] = []
    for attempt in range(3):
        key = f"shrinking-{unique}-{attempt}"
        try:
            seen, rest = _scan_through_a_shrink(redis, key)
        finally:
            redis.delete(key)
        again.append(rest & seen)
        if again[-1]:
            break
    assert again[-1], f"the shrunk table returned nothing again, in {len(again)} tries"


def test_a_streamed_read_through_a_shrink_hands_on_each_row_once(
    redis: redis_lib.Redis, unique: str
) -> None:
    spec = CollectionSpec(f"shrinking-{unique}", SCHEMA, ())
    store = RedisStore(redis, delete_step_rows=10_000)
    store.create_collection(spec)
    offsets = itertools.count(1)
    stream = None
    try:
        for start in range(0, ELEMENTS, 5_000):
            updates = tuple(((f"k{i}", i), 1) for i in range(start, start + 5_000))
            store.apply_requests(TOPIC, 0, [(next(offsets), Append(spec.name, "w", 1, updates, 0))])
        contents = CollectionKeys(spec.name).contents
        _lookups(redis, contents, 1 << TABLE_BITS)
        # The steps the stream will take, looked at first (a scan changes nothing): up to
        # one that stands deep in a group.
        reads, cursor, steps = RedisStepReads(redis, spec, ReadPart()), None, 0
        while True:
            step = reads.scan(cursor)
            steps += 1
            assert step.cursor is not None
            if _deep_in_a_group(int(str(step.cursor[1])), len(step.rows)):  # type: ignore[index]
                break
            cursor = step.cursor
        kept: list[Row] = list(step.rows)
        stream = stream_rows(redis, spec, None, None)
        handed = collections.Counter[Row]()
        result: dict[Row, int] = {}
        for batch in itertools.islice(stream.steps, steps):
            handed.update(batch.keys())
            result.update(batch)
        survivors = in_("k", [row[0] for row in kept])
        store.apply_requests(TOPIC, 0, [(next(offsets), Delete(spec.name, not_(survivors)))])
        store.finish_deletes()
        _lookups(redis, contents, 1 << TABLE_BITS)
        _no_fork(redis)
        extra = ((("extra", -1), 1),)
        store.apply_requests(TOPIC, 0, [(next(offsets), Append(spec.name, "w", 1, extra, 0))])
        gone = ((("extra", -1), -1),)
        store.apply_requests(TOPIC, 0, [(next(offsets), Append(spec.name, "w", 1, gone, 0))])
        for batch in stream.steps:
            handed.update(batch.keys())
            result.update(batch)

        assert reads.rows_read >= steps  # the scan it looked at is the stream's
        assert [row for row, times in handed.items() if times > 1] == []
        assert result == {(f"k{i}", i): 1 for i in range(ELEMENTS)}  # at its as_of
    finally:
        if stream is not None:
            stream.close()
        store.drop_collection(spec.name)


HTTP_ROWS = 200_000
HTTP_TABLE_BITS = 18  # 200,000 elements grow the table to 2**18 buckets
NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"


def _delete_most_between_steps(
    monkeypatch: pytest.MonkeyPatch,
    client: redis_lib.Redis,
    store: RedisStore,
    spec: CollectionSpec,
) -> list[int]:
    """Once a read's scan stands deep in a group (``_deep_in_a_group``), a delete takes
    every row but those of the step before, about a hundredth of them (all of it applied,
    the rehash ended, then one more delete, so the table is as small as it gets)."""
    scan = RedisStepReads.scan
    offsets = itertools.count(HTTP_ROWS + 1)  # after the loading appends' offsets
    last: list[ScanStep[Row]] = []

    def deleting(self: RedisStepReads, cursor: object | None) -> ScanStep[Row]:
        if cursor is not None and last and not deleted:
            at = int(str(cursor[1]))  # type: ignore[index]
            if _deep_in_a_group(at, len(last[-1].rows), HTTP_TABLE_BITS):
                deleted.append(at)
                kept = in_("k", [row[0] for row in last[-1].rows])
                store.apply_requests(TOPIC, 0, [(next(offsets), Delete(spec.name, not_(kept)))])
                store.finish_deletes()
                contents = CollectionKeys(spec.name).contents
                _lookups(client, contents, 1 << HTTP_TABLE_BITS)
                _no_fork(client)
                for diff in (1, -1):
                    extra = Append(spec.name, "w", 1, ((("extra", -1), diff),), 0)
                    store.apply_requests(TOPIC, 0, [(next(offsets), extra)])
        step = scan(self, cursor)
        last[:] = [step]
        return step

    deleted: list[int] = []
    monkeypatch.setattr(RedisStepReads, "scan", deleting)
    return deleted


@pytest.mark.parametrize("media_type", [NDJSON, ARROW])
def test_an_http_stream_through_a_delete_of_most_rows_hands_on_each_row_once(
    endpoints: devservices.Endpoints,
    redis: redis_lib.Redis,
    unique: str,
    monkeypatch: pytest.MonkeyPatch,
    media_type: str,
) -> None:
    spec = CollectionSpec(f"http-shrinking-{unique}", SCHEMA, ())
    store = RedisStore(redis, delete_step_rows=20_000)
    store.create_collection(spec)
    try:
        for start in range(0, HTTP_ROWS, 10_000):
            updates = tuple(((f"k{i}", i), 1) for i in range(start, start + 10_000))
            store.apply_requests(TOPIC, 0, [(start + 1, Append(spec.name, "w", 1, updates, 0))])
        _lookups(redis, CollectionKeys(spec.name).contents, 1 << HTTP_TABLE_BITS)
        deleted = _delete_most_between_steps(monkeypatch, redis, store, spec)
        with served(endpoints.redis_url) as service:
            url = f"{service.url}/api/v1/collections/{spec.name}/rows"
            answer = requests.get(url, headers={"Accept": media_type}, timeout=600)
        assert answer.status_code == 200, answer.text[:2000]
        rows = _answered_rows(answer, media_type)

        assert deleted  # the delete came between two steps of the read
        assert redis.hlen(CollectionKeys(spec.name).contents) < HTTP_ROWS // 10
        counted = collections.Counter(row for row, _ in rows)
        assert [row for row, times in counted.items() if times > 1] == []
        assert dict(rows) == {(f"k{i}", i): 1 for i in range(HTTP_ROWS)}
    finally:
        store.drop_collection(spec.name)


def _answered_rows(answer: requests.Response, media_type: str) -> list[tuple[Row, int]]:
    if media_type == NDJSON:
        lines = [json.loads(line) for line in answer.text.splitlines()[1:]]
        return [((r["row"]["k"], r["row"]["n"]), r["count"]) for r in lines]
    table = pa.ipc.open_stream(io.BytesIO(answer.content)).read_all().to_pylist()
    return [((r["k"], r["n"]), r["count"]) for r in table]
