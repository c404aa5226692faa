"""Reading a bucketed collection on real Redis (and Spark): every read at one consistent cut.

A collection of four buckets gets requests routed as writers route them
(``core/routing.py``), so an append whose rows lie in several buckets is a group of parts.
Some parts of a group are applied and the others not yet: ``query``, ``tail``, ``tail -f``
and both Spark SQL sources must show none of it; once the rest is applied, all of it.
The data source's rows equal ``query``'s, and the stream's changes equal ``tail``'s, each
once. Each test has its own collection, so they run beside other tests on the services.
"""

from __future__ import annotations

import itertools
import json
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager import devservices
from collection_manager.cli.main import main
from collection_manager.core.buckets import bucket_of
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete
from collection_manager.core.routing import route_append, route_delete
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.sql import register
from collection_manager.storage.store import RedisStore
from tests.support import SIZES_SCHEMA

SCHEMA = SIZES_SCHEMA
BUCKETS = 4


def replicas_of(bucket: int, count: int) -> list[str]:
    """``count`` replica ids whose rows lie in ``bucket``."""
    ids = (f"r{n}" for n in itertools.count())
    return list(itertools.islice((r for r in ids if bucket_of(r, BUCKETS) == bucket), count))


# Two replicas per bucket: R[b] are bucket b's.
R = [replicas_of(bucket, 2) for bucket in range(BUCKETS)]


class Writer:
    """Applies requests as the consumer would: each bucket's in offset order."""

    def __init__(self, store: RedisStore, spec: CollectionSpec, topic: str) -> None:
        self.store, self.spec, self.topic = store, spec, topic
        self._offsets = itertools.count()

    def append(self, updates: Sequence[tuple[Row, int]]) -> list[Append]:
        """The parts of one append (routed; a group when its rows lie in several buckets)."""
        return route_append(Append(self.spec.name, "writer", 1, tuple(updates), 0), self.spec)

    def apply(self, *requests: Append | Delete) -> None:
        self.store.apply_requests(self.topic, 0, [(next(self._offsets), r) for r in requests])


@pytest.fixture
def store(redis: redis_lib.Redis) -> RedisStore:
    return RedisStore(redis)


@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, endpoints: devservices.Endpoints, unique: str, tmp_path: Path
) -> str:
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))
    return unique


@pytest.fixture
def writer(store: RedisStore, cli_env: str) -> Iterator[Writer]:
    """A collection of four buckets, each holding two replicas' two workers (one group)."""
    spec = CollectionSpec(f"buckets-{cli_env}", SCHEMA, ("replica_id",), buckets=BUCKETS)
    store.create_collection(spec)
    writer = Writer(store, spec, f"t-{cli_env}")
    first = writer.append([((r, w, None), 1) for rs in R for r in rs for w in range(2)])
    assert len(first) == BUCKETS and {p.bucket.group for p in first if p.bucket} != {None}
    writer.apply(*first)
    yield writer
    store.drop_collection(spec.name)


def cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    captured = capsys.readouterr()
    assert captured.err == ""
    return json.loads(captured.out)


def rows_of(answer: dict[str, Any]) -> dict[tuple[Any, ...], int]:
    return {tuple(entry["row"].values()): entry["count"] for entry in answer["rows"]}


def changes_of(entries: list[dict[str, Any]]) -> Counter[tuple[Any, ...]]:
    return Counter((e["bucket"], e["time"], *e["row"].values(), e["diff"]) for e in entries)


def half_applied(writer: Writer) -> tuple[list[Append], list[Append], list[tuple[Row, int]]]:
    """Applies one part of a group over buckets 0, 1 and 2 (a retraction and a new row in
    each), then a request whole in bucket 3. Returns the group's parts applied, the parts
    not applied yet, and the group's updates."""
    group: list[tuple[Row, int]] = [((R[b][0], 0, None), -1) for b in range(3)] + [
        ((R[b][0], 9, "new"), 1) for b in range(3)
    ]
    parts = writer.append(group)
    assert sorted(p.bucket.bucket for p in parts if p.bucket) == [0, 1, 2]
    writer.apply(parts[0])
    writer.apply(*writer.append([((R[3][1], 5, "alone"), 1)]))  # whole: seen at once
    return parts[:1], parts[1:], group


def test_query_and_tail_show_a_group_whole_or_not_at_all(
    capsys: pytest.CaptureFixture[str], writer: Writer, store: RedisStore
) -> None:
    name = writer.spec.name
    before = cli_json(capsys, "collections", "query", name)
    assert before["as_of"] == "1,1,1,1" and len(before["rows"]) == 16
    _, rest, group = half_applied(writer)

    during = cli_json(capsys, "collections", "query", name)
    assert during["as_of"] == "1,1,1,2"  # bucket 0 held back to before its part of the group
    expected = rows_of(before) | {(R[3][1], 5, "alone"): 1}
    assert rows_of(during) == expected
    pinned = cli_json(capsys, "collections", "query", name, "--where", f"replica_id={R[0][0]}")
    assert (pinned["as_of"], len(pinned["rows"])) == ("1,1,1,2", 2)  # not the group's changes
    changes = cli_json(capsys, "collections", "tail", name, "--since", "0", "-n", "1000")
    assert {c["as_of"] for c in changes} == {"1,1,1,2"}
    assert sum(changes_of(changes).values()) == 17 and all(
        c["row"]["note"] != "new" for c in changes
    )

    writer.apply(*rest)
    after = cli_json(capsys, "collections", "query", name)
    assert after["as_of"] == "2,2,2,2"
    for row, diff in group:
        expected[row] = expected.get(row, 0) + diff
    assert rows_of(after) == {row: n for row, n in expected.items() if n}
    newer = cli_json(capsys, "collections", "tail", name, "--since", during["as_of"], "-n", "1000")
    assert changes_of(newer) == Counter(
        (bucket_of(row[0], BUCKETS), 2, *row, diff) for row, diff in group
    )
    assert (
        cli_json(capsys, "collections", "tail", name, "--since", after["as_of"], "-n", "1000") == []
    )
    # Without --since: the newest -n in all (by Redis's clock), read through the cut now.
    newest = cli_json(capsys, "collections", "tail", name, "-n", "1")
    assert [c["as_of"] for c in newest] == ["2,2,2,2"]
    newest = cli_json(capsys, "collections", "tail", name, "-n", "6")
    assert len(newest) == 6 and changes_of(newest).keys() <= changes_of(changes + newer).keys()

    # --limit: each row exact, at the one cut; the same cut in a table's title.
    some = cli_json(capsys, "collections", "query", name, "--limit", "3")
    assert some["as_of"] == "2,2,2,2" and len(some["rows"]) == 3
    assert rows_of(some).items() <= rows_of(after).items()
    capsys.readouterr()
    assert main(["collections", "query", name, "--format", "table"]) == 0
    assert capsys.readouterr().out.startswith(f"{name} at cut 2,2,2,2: {len(after['rows'])} rows")
    assert main(["collections", "tail", name, "--since", "1,2"]) == 2
    assert "is no cut of 4 buckets" in capsys.readouterr().err

    # --expiry: each row's TTL from its own bucket.
    expiring = Append(name, "writer", 1, (((R[1][1], 7, "ttl"), 1),), 0, ttl_ms=600_000)
    writer.apply(*route_append(expiring, writer.spec))
    shown = cli_json(
        capsys, "collections", "query", name, "--expiry", "--where", f"replica_id={R[1][1]}"
    )
    assert {e["row"]["worker_id"]: e["expires_at"] is not None for e in shown["rows"]} == {
        0: False,
        1: False,
        7: True,
    }


def test_a_fanned_out_delete_is_shown_whole(
    capsys: pytest.CaptureFixture[str], writer: Writer
) -> None:
    name = writer.spec.name
    parts = route_delete(Delete(name, eq("worker_id", 1)), writer.spec)
    assert len(parts) == BUCKETS
    writer.apply(*parts[:3])
    assert len(cli_json(capsys, "collections", "query", name)["rows"]) == 16
    writer.apply(parts[3])
    found = cli_json(capsys, "collections", "query", name)
    assert found["as_of"] == "2,2,2,2" and {row[1] for row in rows_of(found)} == {0}


def _follow(name: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collection_manager.cli.main",
            "collections",
            "tail",
            name,
            "-f",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_tail_follow_prints_a_group_once_it_is_whole_and_each_change_once(
    writer: Writer, store: RedisStore
) -> None:
    name = writer.spec.name
    lines = _follow(name, "-n", "0", "--format", "tsv")
    from_start = _follow(name, "--since", "0", "--format", "json")
    try:
        assert lines.stdout is not None and from_start.stdout is not None
        header = lines.stdout.readline().rstrip("\n").split("\t")
        assert header == ["bucket", "time", "replica_id", "worker_id", "note", "diff", "as_of"]
        first = [json.loads(from_start.stdout.readline()) for _ in range(16)]
        assert {entry["as_of"] for entry in first} == {"1,1,1,1"}
        _, rest, group = half_applied(writer)
        # The whole request in bucket 3 comes; the group's part in bucket 0 does not.
        assert lines.stdout.readline().split("\t")[:5] == ["3", "2", R[3][1], "5", "alone"]
        assert json.loads(from_start.stdout.readline())["row"]["note"] == "alone"
        writer.apply(*rest)
        seen = Counter(tuple(lines.stdout.readline().split("\t")[:6]) for _ in group)
        assert seen == Counter(
            (str(bucket_of(r[0], BUCKETS)), "2", r[0], str(r[1]), r[2] or "null", str(d))
            for r, d in group
        )
        later = [json.loads(from_start.stdout.readline()) for _ in group]
        assert {entry["as_of"] for entry in later} == {"2,2,2,2"} == {store.cut(name).text()}
    finally:
        lines.send_signal(signal.SIGINT)
        from_start.send_signal(signal.SIGTERM)
    for process in (lines, from_start):
        out, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        assert out == "" and "Traceback" not in err  # nothing more, nothing twice


@pytest.fixture
def sql(spark: Any) -> Any:
    register(spark)
    return spark


def test_the_data_sources_read_at_the_cut_query_reads_at(
    sql: Any,
    capsys: pytest.CaptureFixture[str],
    writer: Writer,
    endpoints: devservices.Endpoints,
    tmp_path: Path,
) -> None:
    name = writer.spec.name

    def frame(**options: str) -> Any:
        reader = sql.read.format("collections").option("redis.url", endpoints.redis_url)
        for key, value in options.items():
            reader = reader.option(key, value)
        return reader.load(name)

    def spark_rows(**options: str) -> tuple[dict[tuple[Any, ...], int], set[str]]:
        rows = frame(**options).collect()
        return {(r.replica_id, r.worker_id, r.note): r.multiplicity for r in rows}, {
            r.as_of for r in rows
        }

    stream = (
        sql.readStream.format("collection_changes")
        .option("redis.url", endpoints.redis_url)
        .option("startingTime", "earliest")
        .load(name)
    )
    sink = stream.writeStream.format("memory").queryName(f"changes_{writer.topic[-8:]}")
    query = sink.option("checkpointLocation", str(tmp_path / "checkpoint")).start()

    def delivered() -> Counter[tuple[Any, ...]]:
        query.processAllAvailable()
        rows = sql.sql(f"SELECT * FROM changes_{writer.topic[-8:]}").collect()
        return Counter(tuple(row) for row in rows)

    try:
        _, rest, _ = half_applied(writer)
        by_cli = cli_json(capsys, "collections", "query", name)
        assert spark_rows() == (rows_of(by_cli), {"1,1,1,2"})
        assert frame().rdd.getNumPartitions() == BUCKETS
        assert frame(partitions="2").rdd.getNumPartitions() == 2 * BUCKETS
        assert spark_rows(partitions="2") == spark_rows()
        one = frame().where(f"replica_id = '{R[2][0]}'")
        assert one.rdd.getNumPartitions() == 1  # only the bucket the filter pins
        assert len(one.collect()) == 2
        assert delivered() == changes_of(
            cli_json(capsys, "collections", "tail", name, "--since", "0", "-n", "1000")
        )

        writer.apply(*rest)
        by_cli = cli_json(capsys, "collections", "query", name)
        assert spark_rows() == (rows_of(by_cli), {"2,2,2,2"})
        assert delivered() == changes_of(
            cli_json(capsys, "collections", "tail", name, "--since", "0", "-n", "1000")
        )
    finally:
        query.stop()
