"""Collections in Spark SQL, on real Spark and Redis: snapshots, pushdown, the change stream.

The data sources must agree with the CLI: a join in SQL equals the join of ``query``'s
outputs at the same time, and the stream equals ``tail``. A filter pushed down to an index
reads only its rows, which Redis's own count of key lookups shows.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib

from collection_manager import devservices
from collection_manager.cli.main import main
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.sql import register
from collection_manager.storage.client import redis_client
from collection_manager.storage.rows import encode_row
from collection_manager.storage.store import RedisStore
from tests.integration.own_services import OwnService

SIZES = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "size", "type": "double"},
    ],
}
HYDRATION = {
    "type": "record",
    "name": "hydration",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "hydrated", "type": "boolean"},
        {"name": "note", "type": ["null", "string"]},
    ],
}
REPLICAS = ("r1", "r2", "r3", "r4")
WORKERS = 150


def _load(store: RedisStore, unique: str) -> tuple[str, str]:
    """Two collections: sizes (with a multiplicity of 2 and a delete) and hydration."""
    sizes, hydration = f"sizes-{unique}", f"hydration-{unique}"
    store.create_collection(CollectionSpec(sizes, SIZES, ("replica_id",)))
    store.create_collection(CollectionSpec(hydration, HYDRATION, ("replica_id",)))
    requests: list[Any] = []
    for replica in REPLICAS:
        updates = [((replica, w, w / 2), 2 if w % 7 == 0 else 1) for w in range(WORKERS)]
        requests.append(Append(sizes, replica, 1, updates, 0))
    requests.append(Delete(sizes, eq("worker_id", 3)))
    requests.append(
        Append(hydration, "r1", 1, [(("r1", True, None), 1), (("r2", False, "slow"), 1)], 0)
    )
    requests.append(Append(hydration, "r3", 1, [(("r3", True, "ok"), 1)], 0))
    store.apply_requests(f"t-{unique}", 0, list(enumerate(requests)))
    return sizes, hydration


@pytest.fixture
def sql(spark: Any) -> Any:
    register(spark)
    return spark


@pytest.fixture
def loaded(
    redis: redis_lib.Redis, unique: str, endpoints: devservices.Endpoints
) -> Iterator[tuple[str, str]]:
    store = RedisStore(redis)
    names = _load(store, unique)
    yield names
    for name in names:
        store.drop_collection(name)


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main([*argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_a_sql_join_equals_the_join_of_the_cli_queries_at_the_same_time(
    sql: Any,
    loaded: tuple[str, str],
    endpoints: devservices.Endpoints,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    sizes, hydration = loaded
    for name, view in ((sizes, "sizes"), (hydration, "hydration")):
        frame = sql.read.format("collections").option("redis.url", endpoints.redis_url)
        frame.load(name).createOrReplaceTempView(view)
    joined = sql.sql(
        "SELECT s.replica_id, s.worker_id, s.size, s.multiplicity * h.multiplicity AS n, "
        "h.hydrated, h.note, s.as_of AS sizes_at, h.as_of AS hydration_at "
        "FROM sizes s JOIN hydration h ON s.replica_id = h.replica_id"
    ).collect()

    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    by_cli = {name: _cli_json(capsys, "collections", "query", name) for name in (sizes, hydration)}
    expected = Counter(
        {
            (*s["row"].values(), h["row"]["hydrated"], h["row"]["note"]): s["count"] * h["count"]
            for s in by_cli[sizes]["rows"]
            for h in by_cli[hydration]["rows"]
            if s["row"]["replica_id"] == h["row"]["replica_id"]
        }
    )
    got = Counter({(r.replica_id, r.worker_id, r.size, r.hydrated, r.note): r.n for r in joined})
    assert got == expected and len(got) == 3 * (WORKERS - 1)
    assert {(r.sizes_at, r.hydration_at) for r in joined} == {
        (by_cli[sizes]["as_of"], by_cli[hydration]["as_of"])
    }


def _sent(client: redis_lib.Redis) -> int:
    """Bytes Redis has sent its clients so far: the rows a read got, and a little more."""
    return int(client.info("stats")["total_net_output_bytes"])


def test_a_filter_on_an_indexed_column_reads_only_its_rows_and_gives_what_spark_gives(
    sql: Any, own_service: Any, unique: str
) -> None:
    redis: OwnService = own_service("redis")
    client = redis_client(redis.address)
    sizes, _ = _load(RedisStore(client), unique)

    def frame(pushdown: bool = True) -> Any:  # a new reader: options stick to a reader
        reader = sql.read.format("collections").option("redis.url", redis.address)
        return reader.option("pushdown", str(pushdown).lower()).load(sizes)

    def read(where: str, pushdown: bool) -> tuple[list[Any], int]:
        before = _sent(client)
        rows = frame(pushdown).where(where).collect()
        return sorted(rows), _sent(client) - before

    _, overhead = read("replica_id = 'nobody'", True)  # the calls of any read, no row
    one_replica, sent_pushed = read("replica_id = 'r2'", True)
    same, sent_all = read("replica_id = 'r2'", False)
    assert one_replica == same and len(one_replica) == WORKERS - 1
    stored = {replica: 0 for replica in REPLICAS}  # bytes of each replica's rows in Redis
    for row, count in RedisStore(client).snapshot(sizes).rows.items():
        stored[str(row[0])] += len(encode_row(row, frozenset({2}))) + len(str(count))
    # Without pushdown every row travels; with it, r2's only (each framed in a reply,
    # which adds less than twice its bytes; the other three replicas' would add 3x).
    assert sent_all - overhead >= sum(stored.values()), (sent_all, overhead, stored)
    assert stored["r2"] <= sent_pushed - overhead < 3 * stored["r2"], (sent_pushed, overhead)

    for where in (
        "replica_id IN ('r1', 'r3') AND size >= 10",
        "worker_id > 140 OR replica_id LIKE '%4'",
        "replica_id LIKE 'r%' AND NOT worker_id = 5 AND size IS NOT NULL",
    ):
        assert read(where, True)[0] == read(where, False)[0], where
    parts = frame().where("replica_id IN ('r1', 'r3')").rdd.getNumPartitions()
    assert parts == 2  # one per index set
    client.close()


def _tail(capsys: pytest.CaptureFixture[str], name: str) -> Counter[tuple[Any, ...]]:
    changes = _cli_json(capsys, "collections", "tail", name, "--since", "0", "-n", "100000")
    return Counter((c["time"], *c["row"].values(), c["diff"]) for c in changes)


def test_the_change_stream_equals_tail_and_delivers_each_change_once_across_a_restart(
    sql: Any,
    redis: redis_lib.Redis,
    unique: str,
    endpoints: devservices.Endpoints,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
) -> None:
    store = RedisStore(redis)
    sizes, hydration = _load(store, unique)
    output, checkpoint = tmp_path / "out", tmp_path / "checkpoint"

    def run_stream() -> None:
        stream = (
            sql.readStream.format("collection_changes")
            .option("redis.url", endpoints.redis_url)
            .option("startingTime", "earliest")
            .load(sizes)
        )
        query = (
            stream.writeStream.format("parquet")
            .option("path", str(output))
            .option("checkpointLocation", str(checkpoint))
            .start()
        )
        try:
            query.processAllAvailable()
        finally:
            query.stop()

    try:
        run_stream()
        more = [((r, w, 1.0), -1 if w % 2 else 1) for r in REPLICAS[:2] for w in range(3)]
        store.apply_requests(f"t-{unique}", 0, [(100, Append(sizes, "r1", 1, more, 0))])
        store.apply_requests(f"t-{unique}", 0, [(101, Delete(sizes, eq("replica_id", "r4")))])
        run_stream()
        delivered = Counter(tuple(row) for row in sql.read.parquet(str(output)).collect())
        monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
        monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
        assert delivered == _tail(capsys, sizes)
        assert max(t for t, *_ in delivered) == store.size(sizes)[1]
    finally:
        store.drop_collection(sizes)
        store.drop_collection(hydration)


def _error_of(action: Any) -> str:
    with pytest.raises(Exception) as caught:  # Spark wraps ours in its own
        action()
    return str(caught.value)


def test_bad_input_fails_with_one_clear_error(
    sql: Any, loaded: tuple[str, str], endpoints: devservices.Endpoints, unique: str
) -> None:
    sizes, _ = loaded
    frame = sql.read.format("collections").option("redis.url", endpoints.redis_url)
    assert f"nope-{unique}" in _error_of(lambda: frame.load(f"nope-{unique}").collect())
    assert "UNRESOLVED_COLUMN" in _error_of(lambda: frame.load(sizes).select("nope").collect())
    dead = sql.read.format("collections").option("redis.url", "redis://:secret@127.0.0.1:1")
    message = _error_of(lambda: dead.load(sizes).collect())
    assert "Redis at redis://:***@127.0.0.1:1 does not answer" in message
    assert "secret" not in message
    assert "option partitions must be from 1 to 64, not 0" in _error_of(
        lambda: frame.option("partitions", "0").load(sizes).collect()
    )


def test_a_stream_behind_the_trimmed_log_says_how_to_start_again(
    sql: Any,
    redis: redis_lib.Redis,
    unique: str,
    endpoints: devservices.Endpoints,
    tmp_path: Path,
) -> None:
    store = RedisStore(redis, log_max_length=1)
    name = f"trimmed-{unique}"
    store.create_collection(CollectionSpec(name, SIZES, ("replica_id",)))
    try:
        for offset in range(300):  # XADD MAXLEN ~ trims whole nodes of 100 entries
            update = [(("r1", offset, 1.0), 1)]
            store.apply_requests(f"t-{unique}", 0, [(offset, Append(name, "r1", 1, update, 0))])
        stream = (
            sql.readStream.format("collection_changes")
            .option("redis.url", endpoints.redis_url)
            .option("startingTime", "earliest")
            .load(name)
        )
        sink = stream.writeStream.format("memory").queryName(f"q{unique[-8:]}")
        query = sink.option("checkpointLocation", str(tmp_path / "checkpoint")).start()
        try:
            message = _error_of(query.processAllAvailable)
        finally:
            query.stop()
        assert "no longer holds the changes after time 0" in message
        assert "Start again from a snapshot" in message
    finally:
        store.drop_collection(name)
