"""The reading commands through the real CLI (``main``) on a real Redis.

Each test has its own collection (named after the test), controller namespace and replica
ids, so it can run beside other tests on the same services; the shared consumer record
(``cm:consumer``) is put back as it was.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import Producer

from collection_manager import devservices
from collection_manager.cli.main import main
from collection_manager.cli.status import collection_infos
from collection_manager.config import InfraConfig, ReplicaConfig
from collection_manager.config.services import Service, save_services
from collection_manager.control.controller import Controller
from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.heartbeats import CONSUMER, Heartbeat, alive_key, beat_key
from collection_manager.storage.keys import consumer_key
from collection_manager.storage.store import RedisStore, wall_clock_ms
from spark_consumers.metrics import BatchMetrics, record_batch, record_progress
from tests.support import assert_eventually

# A "count" column on purpose: it must not clash with the multiplicity in the output.
ROW_SCHEMA = {
    "type": "record",
    "name": "health",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "hydrated", "type": "boolean"},
        {"name": "count", "type": ["null", "long"]},
    ],
}
COLUMNS = "replica_id (string), worker_id (long), hydrated (boolean), count (long or null)"


@pytest.fixture
def cli_env(
    monkeypatch: pytest.MonkeyPatch, endpoints: devservices.Endpoints, unique: str, tmp_path: Path
) -> str:
    """The CLI pointed at the session's services, with its own replica namespace."""
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CM_REPLICA_NAMESPACE", f"cm:replicas:{unique}")
    return unique


@pytest.fixture
def store(redis: redis_lib.Redis) -> RedisStore:
    return RedisStore(redis)


@pytest.fixture
def collection(store: RedisStore, cli_env: str) -> Iterator[str]:
    """A collection holding two rows of r1 at time 3, after r2's rows were deleted at 2."""
    name = f"reading-{cli_env}"
    store.create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id",)))
    first = [(("r1", 0, True, 5), 1), (("r1", 1, False, None), 1), (("r2", 0, True, 7), 2)]
    requests: list[Any] = [
        (0, Append(name, "r1", 1, first, produced_at=0)),
        (1, Delete(name, eq("replica_id", "r2"), "gone")),
        (2, Append(name, "r1", 1, [(("r1", 0, True, 5), -1), (("r1", 0, True, 6), 1)], 0)),
    ]
    store.apply_requests(f"t-{cli_env}", 0, requests)
    yield name
    store.drop_collection(name)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """``main(argv)`` as on a terminal: tables, unless ``argv`` names a format."""
    if "--format" not in argv:
        argv = (*argv, "--format", "table")
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def cells(table: str, having: str) -> list[list[str]]:
    """The cells of the table lines that contain ``having``."""
    lines = [line for line in table.splitlines() if having in line and line.startswith("│")]
    return [[cell.strip() for cell in line.split("│")[1:-1]] for line in lines]


def run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status, out, err = run(capsys, *argv, "--format", "json")
    assert (status, err) == (0, "")
    return json.loads(out)


def test_query_prints_a_table_and_json(capsys: pytest.CaptureFixture[str], collection: str) -> None:
    status, out, err = run(capsys, "collections", "query", collection)
    assert (status, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == f"{collection} at time 3: 2 rows"
    assert "replica_id" in lines[2] and "(count)" in lines[2]
    assert cells(out, "r1") == [["r1", "0", "true", "6", "1"], ["r1", "1", "false", "null", "1"]]
    assert run_json(capsys, "collections", "query", collection) == {
        "collection": collection,
        "as_of": 3,
        "rows": [
            {"row": {"replica_id": "r1", "worker_id": 0, "hydrated": True, "count": 6}, "count": 1},
            {
                "row": {"replica_id": "r1", "worker_id": 1, "hydrated": False, "count": None},
                "count": 1,
            },
        ],
    }


def test_query_where_and_no_rows(capsys: pytest.CaptureFixture[str], collection: str) -> None:
    found = run_json(
        capsys, "collections", "query", collection, "--where", "replica_id=r1", "--where", "count>5"
    )
    assert [entry["row"]["count"] for entry in found["rows"]] == [6]
    found = run_json(capsys, "collections", "query", collection, "--where", "count=null")
    assert [entry["row"]["worker_id"] for entry in found["rows"]] == [1]
    status, out, _ = run(capsys, "collections", "query", collection, "--where", "replica_id=r2")
    assert (status, out) == (0, f"{collection} at time 3: no rows matching replica_id = 'r2'\n")
    assert (
        run_json(capsys, "collections", "query", collection, "--where", "replica_id=r2")["rows"]
        == []
    )


def test_query_limit_stops_at_that_many_rows_each_exact(
    capsys: pytest.CaptureFixture[str], collection: str, store: RedisStore
) -> None:
    # Past Redis's compact encoding, so that the scan takes steps and stops early.
    updates = [(("r3", w, w % 2 == 0, w), 1 + w % 3) for w in range(5_000)]
    store.apply_requests(f"t-{collection}", 0, [(3, Append(collection, "r3", 1, updates, 0))])
    whole = run_json(capsys, "collections", "query", collection)
    assert len(whole["rows"]) == 5_002
    exact = {json.dumps(e["row"], sort_keys=True): e["count"] for e in whole["rows"]}
    for limit in (1, 7, 2_500):
        some = run_json(capsys, "collections", "query", collection, "--limit", str(limit))
        assert len(some["rows"]) == limit and some["as_of"] == whole["as_of"]
        for entry in some["rows"]:
            assert exact[json.dumps(entry["row"], sort_keys=True)] == entry["count"]
    limited = run_json(
        capsys, "collections", "query", collection, "--where", "replica_id=r1", "--limit", "9"
    )
    assert len(limited["rows"]) == 2
    status, out, _ = run(capsys, "collections", "query", collection, "--limit", "3")
    assert status == 0
    assert out.splitlines()[0] == (
        f"{collection} at time 4: 3 rows (--limit 3: the first the read found; there may be more)"
    )
    with pytest.raises(SystemExit) as usage:
        main(["collections", "query", collection, "--limit", "0"])
    assert usage.value.code == 2 and "must be at least 1, not 0" in capsys.readouterr().err


def test_tail_prints_the_changes(capsys: pytest.CaptureFixture[str], collection: str) -> None:
    changes = run_json(capsys, "collections", "tail", collection)
    assert sorted(
        (c["time"], c["row"]["worker_id"], c["row"]["count"], c["diff"]) for c in changes
    ) == [
        (1, 0, 5, 1),
        (1, 0, 7, 2),
        (1, 1, None, 1),
        (2, 0, 7, -2),
        (3, 0, 5, -1),
        (3, 0, 6, 1),
    ]
    assert list(changes[0]["row"]) == ["replica_id", "worker_id", "hydrated", "count"]
    assert [
        c["time"] for c in run_json(capsys, "collections", "tail", collection, "--since", "2")
    ] == [2, 3, 3]
    newest = run_json(capsys, "collections", "tail", collection, "-n", "2")
    assert [(c["time"], c["diff"]) for c in newest] == [(3, -1), (3, 1)]  # oldest to newest
    first = run_json(capsys, "collections", "tail", collection, "--since", "0", "-n", "2")
    assert [c["time"] for c in first] == [1, 1]
    status, out, _ = run(capsys, "collections", "tail", collection, "-n", "3")
    assert out.splitlines()[0] == f"{collection}: the newest 3 changes, through time 3"
    status, out, _ = run(capsys, "collections", "tail", collection, "--since", "2")
    assert status == 0
    assert out.splitlines()[0] == f"{collection}: 3 changes at times >= 2"
    assert any("r2" in line and "-2" in line for line in out.splitlines())
    status, out, _ = run(capsys, "collections", "tail", collection, "--since", "4")
    assert out == f"{collection}: no changes at times >= 4 (its latest time is 3)\n"


def _follow(collection: str, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "collection_manager.cli.main",
            "collections",
            "tail",
            collection,
            "-f",
            *args,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # As in a terminal: a shell runs a background job (make's under a script started
        # with `&`) with SIGINT ignored, and the child would inherit that.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def test_tail_follow_prints_each_new_change_once_until_ctrl_c(
    collection: str, store: RedisStore, cli_env: str
) -> None:
    """From the latest time on by default, from ``--since`` when given; a line per change,
    none twice, in time order; Ctrl-C or SIGTERM ends it with 0."""
    new = _follow(collection, "-n", "0")
    since_two = _follow(collection, "--since", "2", "--format", "json")
    try:
        # Before the append: the header of the one (printed once it knows where to start),
        # what exists at times 2 and 3 from the other.
        assert new.stdout.readline().split("\t")[:2] == ["time", "replica_id"]  # type: ignore[union-attr]
        old = [json.loads(since_two.stdout.readline())["time"] for _ in range(3)]  # type: ignore[union-attr]
        assert old == [2, 3, 3]
        more = Append(collection, "r1", 1, [(("r1", 2, True, None), 1)], produced_at=0)
        store.apply_requests(f"t-{cli_env}", 0, [(3, more)])
        assert new.stdout.readline() == "4\tr1\t2\ttrue\tnull\t1\n"  # type: ignore[union-attr]
        assert json.loads(since_two.stdout.readline()) == {  # type: ignore[union-attr]
            "time": 4,
            "row": {"replica_id": "r1", "worker_id": 2, "hydrated": True, "count": None},
            "diff": 1,
        }
    finally:
        new.send_signal(signal.SIGINT)  # Ctrl-C
        since_two.send_signal(signal.SIGTERM)  # kill
    for process in (new, since_two):
        out, err = process.communicate(timeout=30)
        assert process.returncode == 0, err
        assert out == "" and "Traceback" not in err  # nothing more, nothing twice


def test_collections_list_and_describe(capsys: pytest.CaptureFixture[str], collection: str) -> None:
    listed = {entry["name"]: entry for entry in run_json(capsys, "collections", "list")}
    replica_id = {"name": "replica_id", "type": "string", "nullable": False, "indexed": True}
    assert listed[collection] == {
        "name": collection,
        "rows": 2,
        "time": 3,
        "columns": [replica_id, *listed[collection]["columns"][1:]],
        "indexed_columns": ["replica_id"],
        "buckets": 1,
        "bucket_column": None,
    }
    names = [column["name"] for column in listed[collection]["columns"]]
    assert names == ["replica_id", "worker_id", "hydrated", "count"]
    described = run_json(capsys, "collections", "show", collection)
    # What the listing shows, then the collection's own; the same as the HTTP API's.
    assert {k: v for k, v in described.items() if k in listed[collection]} == listed[collection]
    assert (described["rows"], described["time"], described["counters"]["requests"]) == (2, 3, 3)
    status, out, _ = run(capsys, "collections", "show", collection)
    assert status == 0
    assert out.splitlines()[0] == f"{collection}: 2 rows at time 3"


def test_query_and_describe_show_row_ttls(
    capsys: pytest.CaptureFixture[str], store: RedisStore, collection: str
) -> None:
    now, hour = wall_clock_ms(), 3_600_000  # an hour: no retraction timer gets there
    refresh = Append(collection, "r1", 1, [(("r1", 1, False, None), 0)], 0, ttl_ms=hour)
    store.apply_requests("ttl", 0, [(0, refresh)], now_ms=now)
    rows = run_json(capsys, "collections", "query", collection, "--expiry")["rows"]
    assert [(r["row"]["worker_id"], r["expires_at"]) for r in rows] == [(0, None), (1, now + hour)]
    status, out, _ = run(capsys, "collections", "query", collection, "--expiry")
    assert status == 0 and "expires" in out.splitlines()[2]
    [without, [*_, expires]] = cells(out, "r1")
    assert without[-1] == "-" and expires.endswith(("(in 59min)", "(in 60min)"))
    described = run_json(capsys, "collections", "show", collection)
    assert described["ttl"] == {"rows": 1, "next_expiry_ms": now + hour}
    status, out, _ = run(capsys, "collections", "show", collection)
    assert out.splitlines()[0].startswith(f"{collection}: 2 rows at time 4; 1 row with a TTL, ")


@pytest.fixture
def consumer_record(
    redis: redis_lib.Redis, endpoints: devservices.Endpoints, topic: str
) -> Iterator[str]:
    """A running consumer's record of ``topic`` whose last batch read 41 of the 45 records
    of its partition 0 (it saw no lag when it planned it), and one of another topic."""
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    for _ in range(45):
        producer.produce(topic, b"x", partition=0)
    assert producer.flush(30) == 0
    record_batch(endpoints.redis_url, topic, BatchMetrics(7, {}, 2, 1, {0: 41}))
    record_batch(endpoints.redis_url, f"other-{topic}", BatchMetrics(3, {}, 0, 0, {0: 2}))
    progress = {
        "batchId": 7,
        "processedRowsPerSecond": 120.4,
        "timestamp": "2025-01-01T12:00:00.000Z",
        "sources": [{"endOffset": {topic: {"0": 41}}, "latestOffset": {topic: {"0": 41}}}],
    }
    record_progress(endpoints.redis_url, topic, progress)
    heartbeat = Heartbeat(endpoints.redis_url, CONSUMER, topic).start()  # it runs
    try:
        assert_eventually(lambda: _alive(redis, topic), timeout=10, interval=0.05)
        yield topic
    finally:
        heartbeat.stop()
        redis.delete(consumer_key(topic), consumer_key(f"other-{topic}"))
        redis.delete(beat_key(CONSUMER, topic))


def _alive(redis: redis_lib.Redis, topic: str) -> None:
    assert redis.exists(alive_key(CONSUMER, topic))


def test_status_shows_the_consumer_its_lag_now_and_the_collections(
    capsys: pytest.CaptureFixture[str], collection: str, store: RedisStore, consumer_record: str
) -> None:
    topic = consumer_record
    found = run_json(capsys, "status", "--topic", topic)
    consumer = found["consumer"]
    assert consumer["topic"] == topic
    assert f"other-{topic}" in found["other_topics"]  # its own record, not mixed in
    assert consumer["kafka"] == "reachable"
    assert consumer["state"] == "running"
    expected = {
        "batches": 1,
        "dead_letters": 2,
        "control_requests": 1,
        "processed_rows_per_s": 120.4,
        "last_batch_id": 7,
        "last_progress_ms": 1_735_732_800_000,  # 2025-01-01T12:00:00.000Z
        "lag_total": 4,
        # Every partition of the topic: 1 to 3 hold nothing.
        "lag": [{"topic": topic, "partition": p, "lag": 4 if p == 0 else 0} for p in range(4)],
    }
    assert {name: consumer[name] for name in expected} == expected
    ours = [entry for entry in found["collections"] if entry["name"] == collection]
    stats = store.stats(collection)
    assert ours == [
        {
            "name": collection,
            "rows": 2,
            "time": 3,
            "counters": {name: stats.get(name, 0) for name in ours[0]["counters"]},
            "buckets": 1,
            "bucket_column": None,
            "bucket_rows": [],
        }
    ]
    assert ours[0]["counters"]["requests"] == 3
    status, out, _ = run(capsys, "status", "--topic", topic)
    assert status == 0
    lines = out.splitlines()
    assert lines[0] == f"consumer of {topic}"
    lag_rows, other_rows = cells(out, f"│ {topic} "), cells(out, f"│ other-{topic} ")
    assert lag_rows[0] == [topic, "0", "4"] and other_rows == [[f"other-{topic}"]]
    assert any(line.startswith(f"│ {collection} ") for line in lines)


def test_before_the_first_batch_ends_the_lag_is_all_kafka_holds_of_each_partition(
    capsys: pytest.CaptureFixture[str],
    redis: redis_lib.Redis,
    endpoints: devservices.Endpoints,
    cli_env: str,
    topic: str,
) -> None:
    """The consumer's first batch applies rows before it ends and reports what it read
    (slow on a replicated deployment): status lists every partition meanwhile, with what
    Kafka holds of it as its lag, never an empty table."""
    producer = Producer({"bootstrap.servers": endpoints.kafka_bootstrap})
    for partition, records in enumerate((3, 0, 5, 1)):
        for _ in range(records):
            producer.produce(topic, b"x", partition=partition)
    assert producer.flush(30) == 0
    heartbeat = Heartbeat(endpoints.redis_url, CONSUMER, topic).start()  # it runs
    try:
        assert_eventually(lambda: _alive(redis, topic), timeout=10, interval=0.05)
        consumer = run_json(capsys, "status", "--topic", topic)["consumer"]
    finally:
        heartbeat.stop()
        redis.delete(beat_key(CONSUMER, topic))
    assert consumer["last_batch_id"] is None and consumer["lag_total"] == 9
    assert [(e["partition"], e["lag"]) for e in consumer["lag"]] == [(0, 3), (1, 0), (2, 5), (3, 1)]


def test_status_says_the_local_kafka_is_not_running_when_its_process_is_gone(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    cli_env: str,
    consumer_record: str,
) -> None:
    """``infra up`` recorded a broker, which has stopped since: the lag is unknown, and
    status says that this broker is not running, not that none is configured."""
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    state = tmp_path / "services-state"
    broker = Service("kafka", gone.pid, "127.0.0.1:9", "log", "server.properties", 1)
    save_services(InfraConfig(state_dir=state).services_file, {"kafka": broker})
    monkeypatch.delenv("CM_KAFKA_BOOTSTRAP")
    monkeypatch.setenv("CM_STATE_DIR", str(state))
    consumer = run_json(capsys, "status", "--topic", consumer_record)["consumer"]
    assert (consumer["kafka"], consumer["lag_total"]) == ("not running", None)
    assert "`infra up` starts it again" in consumer["kafka_detail"]


def test_replicas_lists_members(
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    cli_env: str,
    kafka: str,
    endpoints: devservices.Endpoints,
    topic: str,
) -> None:
    monkeypatch.setenv("CM_TOPIC", topic)
    status, out, _ = run(capsys, "replicas", "list")
    assert (status, out) == (
        0,
        "no live replicas; start one with `collection-manager replicas run --id r1`\n",
    )
    assert run_json(capsys, "replicas", "list") == []
    config = ReplicaConfig(replica_namespace=f"cm:replicas:{cli_env}")
    controller = Controller.connect(kafka, endpoints.redis_url, topic, config)
    first, second = f"{cli_env}-a", f"{cli_env}-b"
    try:
        controller.add_replica(first)
        controller.add_replica(second)
        controller.remove_replica(second, "removed by the test")
    finally:
        controller.close()
    listed = run_json(capsys, "replicas", "list", "--all")
    assert [(r["replica_id"], r["epoch"], r["state"], r["reason"]) for r in listed] == [
        (first, 1, "active", ""),
        (second, 1, "removed", "removed by the test"),
    ]
    assert listed[0]["lease_expires_ms"] is not None
    assert listed[1]["lease_expires_ms"] is None
    assert [r["replica_id"] for r in run_json(capsys, "replicas", "list")] == [first]  # live only
    status, out, _ = run(capsys, "replicas", "list", "--all")
    assert [row[:3] for row in cells(out, cli_env)] == [
        [first, "1", "active"],
        [second, "1", "removed"],
    ]


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["collections", "query", "{collection}x"],
            "unknown collection '{collection}x' (did you mean '{collection}'?); collections: ",
        ),
        (
            ["collections", "tail", "{collection}x"],
            "unknown collection '{collection}x' (did you mean",
        ),
        (["collections", "show", "{collection}x"], "unknown collection '{collection}x'"),
        (
            ["collections", "query", "{collection}", "--where", "nope=1"],
            f"unknown column 'nope'; columns of {{collection}}: {COLUMNS}",
        ),
        (
            ["collections", "query", "{collection}", "--where", "count==1"],
            "unknown operator '==' (did you mean '='?); operators: =, !=, <, <=, >, >=, ^=",
        ),
        (
            ["collections", "query", "{collection}", "--where", "count=x"],
            "count is a long column; expected an integer",
        ),
        (
            ["collections", "query", "{collection}", "--where", "hydrated=yes"],
            "hydrated is a boolean column; expected true or false",
        ),
        (
            ["collections", "query", "{collection}", "--where", "count"],
            "expected COLUMN<op>VALUE, e.g. replica_id=r1",
        ),
    ],
    ids=[
        "query-unknown",
        "tail-unknown",
        "describe-unknown",
        "column",
        "operator",
        "long-value",
        "boolean-value",
        "syntax",
    ],
)
def test_errors_are_one_line_saying_what_is_valid(
    capsys: pytest.CaptureFixture[str], collection: str, argv: list[str], message: str
) -> None:
    status, out, err = run(capsys, *(arg.format(collection=collection) for arg in argv))
    assert (status, out) == (1, "")
    assert err.startswith("error: ")
    assert err.count("\n") == 1
    assert message.format(collection=collection) in err


def test_a_collection_dropped_between_the_listing_and_its_reads_is_left_out(
    redis: redis_lib.Redis, collection: str
) -> None:
    """``status`` and ``collections list`` beside a running drop (another test's, in a
    parallel run) list what is still there instead of failing."""

    class DroppedMidListing(RedisStore):
        def collections(self) -> list[str]:
            return [*super().collections(), f"dropped-{collection}"]

    names = [info.spec.name for info in collection_infos(DroppedMidListing(redis))]
    assert collection in names
    assert f"dropped-{collection}" not in names


# Unicode's box-drawing block: what tables are drawn with.
BOX_DRAWING = {chr(c) for c in range(0x2500, 0x2580)}


@pytest.mark.parametrize(
    ("argv", "header"),
    [
        (["collections", "query", "{c}"], "replica_id\tworker_id\thydrated\tcount\t(count)"),
        (
            ["collections", "query", "{c}", "--where", "replica_id=r1", "--limit", "1"],
            "replica_id\tworker_id",
        ),
        (["collections", "tail", "{c}"], "time\treplica_id\tworker_id\thydrated\tcount\tdiff"),
        (["collections", "list"], "name\trows\ttime\tcolumns\tindexed"),
        (["collections", "show", "{c}"], "column\ttype"),
        (["status"], "collection\trows\ttime"),
        (["replicas", "list", "--all"], "id\tepoch"),
        (["infra", "status"], "service\tsource\taddress"),
    ],
    ids=["query", "query-where", "tail", "list", "show", "status", "replicas", "infra"],
)
def test_a_piped_read_prints_tab_separated_lines_without_box_drawing(
    collection: str, argv: list[str], header: str
) -> None:
    command = [sys.executable, "-m", "collection_manager.cli.main"]
    args = [arg.format(c=collection) for arg in argv]
    piped = subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert not set(piped.stdout) & BOX_DRAWING, piped.stdout
    lines = piped.stdout.splitlines()
    assert header in "\n".join(lines), piped.stdout
    if argv[0] in ("query", "tail"):
        assert lines[0] == header or lines[0].startswith(header)
        assert all(line.count("\t") == lines[0].count("\t") for line in lines), lines
        bare = subprocess.run([*command, *args, "--no-headers"], capture_output=True, text=True)
        assert bare.stdout.splitlines() == lines[1:]
