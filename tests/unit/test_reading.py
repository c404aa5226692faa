"""The reading commands' pure parts: ``--where`` parsing, JSON and table rendering, errors."""

from __future__ import annotations

import dataclasses
import json
import re
from typing import Any

import pytest

from collection_manager.cli.collections import describe_json, list_json, list_table
from collection_manager.cli.main import main
from collection_manager.cli.output import (
    MAX_LISTED,
    TableView,
    json_text,
    print_table,
    show,
    unknown_collection,
)
from collection_manager.cli.query import (
    EXAMPLE_CUT_SNAPSHOT,
    EXAMPLE_SNAPSHOT,
    query_json,
    query_table,
)
from collection_manager.cli.replicas import EXAMPLE_NOW, EXAMPLE_REPLICAS, moment, replicas_json
from collection_manager.cli.replicas import replicas_table as replicas_view
from collection_manager.cli.status import (
    EXAMPLE_CONSUMER,
    EXAMPLE_UNPUBLISHED,
    CollectionInfo,
    consumer_summary,
    controller_summary,
    status_json,
    unpublished_summary,
)
from collection_manager.cli.status_views import controller_table, status_tables
from collection_manager.cli.tail import EXAMPLE_BUCKETED, EXAMPLE_CUT_LOG, EXAMPLE_LOG
from collection_manager.cli.tail_views import cut_tail_json, tail_json, tail_table
from collection_manager.cli.where import OPERATORS, parse_where
from collection_manager.control.controller import ReplicaStatus
from collection_manager.core.errors import FilterError, UnknownCollectionError
from collection_manager.core.filters import and_, eq, ge, gt, is_null, le, lt, ne, not_, prefix
from collection_manager.storage.consumer_status import ConsumerRecord
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.heartbeats import Liveness
from collection_manager.storage.store import LogEntry, Snapshot
from schemas.introspection import introspection_spec

FRONTIERS = introspection_spec("compute_frontiers")
ERRORS = introspection_spec("error_counts")
HYDRATION = introspection_spec("hydration_status")
METRICS = introspection_spec("replica_metrics")

# --where


def test_where_terms_are_typed_by_their_column() -> None:
    where = parse_where(["replica_id=r1", "worker_id=3", "frontier=null"], FRONTIERS)
    assert where == and_(eq("replica_id", "r1"), eq("worker_id", 3), is_null("frontier"))
    assert parse_where(["hydrated=true"], HYDRATION) == eq("hydrated", True)
    assert parse_where(["hydrated=FALSE"], HYDRATION) == eq("hydrated", False)
    assert parse_where(["cpu>=0.5"], METRICS) == ge("cpu", 0.5)
    assert parse_where([], FRONTIERS) is None


@pytest.mark.parametrize(
    ("term", "expected"),
    [
        ("worker_id!=3", ne("worker_id", 3)),
        ("worker_id<3", lt("worker_id", 3)),
        ("worker_id<=3", le("worker_id", 3)),
        ("worker_id>3", gt("worker_id", 3)),
        ("worker_id >= 3", ge("worker_id", 3)),
        ("frontier!=null", not_(is_null("frontier"))),
        ("export_id^=u", prefix("export_id", "u")),
        ("export_id=a=b", eq("export_id", "a=b")),
        ("export_id=", eq("export_id", "")),
    ],
)
def test_every_operator_parses(term: str, expected: object) -> None:
    assert parse_where([term], FRONTIERS) == expected


COLUMNS = "replica_id (string), export_id (string), worker_id (long), frontier (long or null)"


@pytest.mark.parametrize(
    ("term", "message"),
    [
        ("nope=1", f"unknown column 'nope'; columns of compute_frontiers: {COLUMNS}"),
        ("worker=1", "unknown column 'worker' (did you mean 'worker_id'?)"),
        ("worker_id", "expected COLUMN<op>VALUE, e.g. replica_id=r1"),
        ("=r1", "expected COLUMN<op>VALUE"),
        ("worker_id 3", "expected COLUMN<op>VALUE"),
        (
            "worker_id==3",
            "unknown operator '==' (did you mean '='?); operators: " + ", ".join(OPERATORS),
        ),
        ("worker_id=<3", "unknown operator '=<' (did you mean '<='?)"),
        ("worker_id~3", "unknown operator '~'; operators: =, !=, <, <=, >, >=, ^="),
        (
            "worker_id=x",
            "worker_id is a long column; expected an integer (at most 2^53 - 1 in size), "
            "e.g. worker_id=42",
        ),
        ("worker_id=1.5", "worker_id is a long column"),
        ("worker_id=99999999999999999999", "worker_id is a long column"),
        ("worker_id=9007199254740992", "worker_id is a long column"),
        ("worker_id<null", "< cannot compare with null; use worker_id=null or worker_id!=null"),
        ("worker_id^=1", "^= (starts with) needs a string column; worker_id is a long column"),
    ],
)
def test_bad_where_terms_say_what_is_valid(term: str, message: str) -> None:
    with pytest.raises(FilterError) as caught:
        parse_where(["replica_id=r1", term], FRONTIERS)
    text = str(caught.value)
    assert text.startswith(f"--where {term!r}: ")
    assert message in text
    assert "\n" not in text


@pytest.mark.parametrize(
    ("spec", "term", "message"),
    [
        (HYDRATION, "hydrated=yes", "hydrated is a boolean column; expected true or false"),
        (HYDRATION, "hydrated>true", "hydrated is a boolean column; use = or !="),
        (METRICS, "cpu=abc", "cpu is a double column; expected a finite number, e.g. cpu=0.5"),
        (METRICS, "cpu=nan", "cpu is a double column; expected a finite number"),
        (METRICS, "memory=inf", "memory is a long column"),
    ],
)
def test_bad_values_name_the_type(spec: Any, term: str, message: str) -> None:
    with pytest.raises(FilterError, match=re.escape(message)):
        parse_where([term], spec)


# Unknown collections


def test_unknown_collection_without_any_says_how_to_create_them() -> None:
    error = unknown_collection("compute_frontiers", [])
    assert isinstance(error, UnknownCollectionError)
    assert "there are no collections yet" in str(error)
    assert "collections create-introspection" in str(error)


def test_unknown_collection_lists_the_existing_ones() -> None:
    text = str(unknown_collection("compute_frontirs", ["compute_frontiers", "error_counts"]))
    assert text == (
        "unknown collection 'compute_frontirs' (did you mean 'compute_frontiers'?); "
        "collections: compute_frontiers, error_counts"
    )


def test_unknown_collection_lists_at_most_a_few() -> None:
    names = [f"c{i:03}" for i in range(MAX_LISTED + 5)]
    text = str(unknown_collection("x", names))
    assert "c000" in text
    assert f"c{MAX_LISTED:03}" not in text
    assert "and 5 more (`collection-manager collections list`)" in text


# query and tail


def test_query_json_nests_the_row_so_a_count_column_is_kept() -> None:
    snapshot = Snapshot({("r2", "e", 1): 2, ("r1", "e", 7): 1}, 9)
    assert query_json(ERRORS, snapshot) == {
        "collection": "error_counts",
        "as_of": 9,
        "rows": [
            {"row": {"replica_id": "r1", "export_id": "e", "count": 7}, "count": 1},
            {"row": {"replica_id": "r2", "export_id": "e", "count": 1}, "count": 2},
        ],
    }


def test_query_rows_are_ordered_by_value_nulls_first() -> None:
    snapshot = Snapshot({("r1", "u", 0, 5): 1, ("r1", "u", 0, None): 1, ("r1", "u", 0, 3): 1}, 4)
    frontiers = [entry["row"]["frontier"] for entry in query_json(FRONTIERS, snapshot)["rows"]]
    assert frontiers == [None, 3, 5]
    assert [row[3] for row in query_table(FRONTIERS, snapshot, None).rows] == [None, 3, 5]


def test_query_table_names_the_time_the_filter_and_the_multiplicity() -> None:
    view = query_table(ERRORS, Snapshot({("r1", "e", 7): 3}, 9), eq("replica_id", "r1"))
    assert view.title == "error_counts at time 9: 1 row matching replica_id = 'r1'"
    assert view.columns == ["replica_id", "export_id", "count", "(count)"]
    assert view.rows == [("r1", "e", 7, 3)]
    assert query_table(FRONTIERS, Snapshot({}, 0), None).columns[-1] == "count"


def test_empty_query_says_no_rows() -> None:
    assert query_table(FRONTIERS, Snapshot({}, 5), eq("replica_id", "r9")).empty == (
        "compute_frontiers at time 5: no rows matching replica_id = 'r9'"
    )
    assert query_table(FRONTIERS, Snapshot({}, 0), None).empty == (
        "compute_frontiers at time 0: no rows (nothing applied to it yet)"
    )


def test_tail_json_and_table() -> None:
    entries = [LogEntry(3, ("r1", "e", 1), 1), LogEntry(4, ("r1", "e", 1), -1)]
    assert tail_json(ERRORS, entries) == [
        {"time": 3, "row": {"replica_id": "r1", "export_id": "e", "count": 1}, "diff": 1},
        {"time": 4, "row": {"replica_id": "r1", "export_id": "e", "count": 1}, "diff": -1},
    ]
    view = tail_table(ERRORS, entries, since=3, limit=100, latest=4)
    assert view.title == "error_counts: 2 changes at times >= 3"
    assert view.rows == [(3, "r1", "e", 1, 1), (4, "r1", "e", 1, -1)]
    limited = tail_table(ERRORS, entries, since=3, limit=2, latest=4)
    assert "(the first 2; raise -n or --since for more)" in limited.title
    empty = tail_table(ERRORS, [], since=7, limit=100, latest=4)
    assert empty.empty == "error_counts: no changes at times >= 7 (its latest time is 4)"


# collections, status, replicas


def _info(name: str = "compute_frontiers") -> CollectionInfo:
    counters = dict.fromkeys(SHOWN_COUNTERS, 0) | {"requests": 3}
    return CollectionInfo(introspection_spec(name), 2, 42, counters)


def test_collections_list_and_describe_json() -> None:
    frontier = {"name": "frontier", "type": "long", "nullable": True, "indexed": False}
    [listed] = list_json([_info()])
    assert listed == {
        "name": "compute_frontiers",
        "rows": 2,
        "time": 42,
        "columns": listed["columns"],
        "indexed_columns": ["replica_id"],
        "buckets": 1,
        "bucket_column": None,
    }
    assert [c["name"] for c in listed["columns"]] == [
        "replica_id",
        "export_id",
        "worker_id",
        "frontier",
    ]
    assert listed["columns"][3] == frontier
    described = describe_json(_info())
    # The listing's fields, then what only a collection's own answer shows: the API's.
    assert list(described) == [
        *listed,
        "counters",
        "ttl",
        "row_schema",
        "bucket_rows",
        "partitioning",
    ]
    assert described["ttl"] == {"rows": 0, "next_expiry_ms": None}
    assert described["columns"][3] == {
        "name": "frontier",
        "type": "long",
        "nullable": True,
        "indexed": False,
    }
    assert described["counters"]["requests"] == 3
    assert "create-introspection" in list_table([]).empty


def test_consumer_summary_of_nothing_recorded() -> None:
    assert consumer_summary(ConsumerRecord.parse({}), topic="t1") == {
        "topic": "t1",
        "state": "unknown",
        "state_since_ms": None,
        "retries": 0,
        "outage_cause": None,
        "last_seen_ms": None,
        "pid": None,
        "host": None,
        "kafka": "reachable",
        "kafka_detail": None,
        "batches": 0,
        "dead_letters": 0,
        "control_requests": 0,
        "processed_rows_per_s": None,
        "last_batch_id": None,
        "last_progress_ms": None,
        "lag_total": 0,
        "lag": [],
        "rewinds": 0,
        "topic_recreations": 0,
        "last_rewind": None,
    }
    assert (
        consumer_summary(ConsumerRecord.parse({"batches": "2", "progress": "not json"}))["batches"]
        == 2
    )


def test_a_consumer_whose_heartbeat_ran_out_is_stopped_whatever_it_last_wrote() -> None:
    raw = {"health": json.dumps({"state": "running", "since_ms": 5}), "batches": "3"}
    beat = {"at_ms": 1_735_732_800_000, "pid": 7, "host": "h"}
    alive = consumer_summary(ConsumerRecord.parse(raw), liveness=Liveness(True, beat))
    assert (alive["state"], alive["pid"], alive["last_seen_ms"]) == ("running", 7, beat["at_ms"])
    dead = consumer_summary(ConsumerRecord.parse(raw), liveness=Liveness(False, beat))
    assert (dead["state"], dead["state_since_ms"]) == ("stopped", beat["at_ms"])
    consumer, *_ = status_tables(dead, [], recorded=True)
    assert consumer.rows[0][0] == "stopped (last seen 2025-01-01 12:00:00Z)"
    never = consumer_summary(ConsumerRecord.parse(raw), liveness=Liveness(False, None))
    assert never["state"] == "unknown"


def test_the_controller_shows_whether_it_runs_and_its_last_check() -> None:
    beat = {"at_ms": 1_735_732_800_000, "last_check_ms": 1_735_732_799_000, "pid": 9, "host": "h"}
    running = controller_summary("ns", Liveness(True, beat))
    assert running["state"] == "running" and running["last_check_ms"] == beat["last_check_ms"]
    table = controller_table(running)
    assert table.rows == [("running", "2025-01-01 11:59:59Z", "9@h")]
    stopped = controller_table(controller_summary("ns", Liveness(False, beat)))
    assert stopped.rows[0][0] == "stopped (last seen 2025-01-01 12:00:00Z)"
    never = controller_table(controller_summary("ns", Liveness(False, None)))
    assert never.rows == [] and "no lease expires" in never.empty


def test_with_kafka_unreachable_the_lag_is_unknown_not_stale() -> None:
    progress = {"lag": {"t:0": 4}, "batch_id": 7}
    raw = {"batches": "8", "progress": json.dumps(progress)}
    summary = consumer_summary(ConsumerRecord.parse(raw), None, kafka="unreachable")
    assert (summary["kafka"], summary["lag_total"], summary["lag"]) == ("unreachable", None, None)
    consumer, _collections = status_tables(summary, [], recorded=True)
    assert consumer.rows[0][5] == "unknown: Kafka does not answer"


@pytest.mark.parametrize(
    ("kafka", "why"),
    [
        ("not running", "the local Kafka that `collection-manager infra up` started is not"),
        ("not configured", "no Kafka: set CM_KAFKA_BOOTSTRAP, or start one with"),
    ],
)
def test_an_unknown_lag_says_why(kafka: str, why: str) -> None:
    summary = consumer_summary(ConsumerRecord.parse({"batches": "1"}), None, kafka=kafka)
    consumer, _collections = status_tables(summary, [], recorded=True)
    assert summary["kafka_detail"].startswith(why)
    assert consumer.rows[0][5].startswith(f"unknown: {why}")


def test_an_outage_shows_as_the_consumer_state() -> None:
    health = {"state": "retrying", "since_ms": 1_735_732_800_000, "retries": 3, "cause": "down"}
    summary = consumer_summary(ConsumerRecord.parse({"health": json.dumps(health)}))
    assert (summary["state"], summary["retries"], summary["outage_cause"]) == (
        "retrying",
        3,
        "down",
    )
    [consumer, _lag, _collections] = status_tables(summary, [], recorded=True)
    assert consumer.rows[0][0] == "retrying since 2025-01-01 12:00:00Z (3 retries): down"


def test_consumer_lag_is_per_partition_in_numeric_order() -> None:
    progress = {"lag": {"t:10": 1, "t:2": 4, "a:0": 0}, "batch_id": 7}
    summary = consumer_summary(
        ConsumerRecord.parse({"batches": "8", "progress": json.dumps(progress)})
    )
    assert summary["lag"] == [
        {"topic": "a", "partition": 0, "lag": 0},
        {"topic": "t", "partition": 2, "lag": 4},
        {"topic": "t", "partition": 10, "lag": 1},
    ]
    assert (summary["lag_total"], summary["last_batch_id"]) == (5, 7)


def test_status_tables() -> None:
    nothing = status_tables(consumer_summary(ConsumerRecord.parse({})), [], recorded=False)
    assert [view.rows for view in nothing] == [[], []]
    assert "nothing recorded yet" in nothing[0].empty
    assert "no collections yet" in nothing[1].empty
    consumer, lag, collections = status_tables(EXAMPLE_CONSUMER, [_info()], recorded=True)
    assert consumer.rows == [("running", 12, 1, 4, 250, 3, "2025-01-01 12:00:00Z")]
    assert lag.rows == [("cm.requests", 0, 3), ("cm.requests", 1, 0)]
    assert collections.rows == [("compute_frontiers", 2, 42, 3, 0, 0, 0, 0, 0, 0)]
    found = status_json(EXAMPLE_CONSUMER, EXAMPLE_UNPUBLISHED, [_info()])
    assert found["collections"] == [
        {
            "name": "compute_frontiers",
            "rows": 2,
            "time": 42,
            "counters": _info().counters,
            "buckets": 1,
            "bucket_column": None,
            "bucket_rows": [],
        }
    ]


def test_status_shows_unpublished_dead_letters_only_when_there_are_some() -> None:
    none = unpublished_summary(0, [])
    assert len(status_tables(EXAMPLE_CONSUMER, [], True, none)) == 3
    views = status_tables(EXAMPLE_CONSUMER, [], True, EXAMPLE_UNPUBLISHED)
    unpublished = views[2]
    assert unpublished.title.startswith("1 dead letter could not be published")
    assert unpublished.columns[:3] == ["topic", "partition", "offset"]
    assert unpublished.rows == [
        (
            "cm.requests",
            0,
            1234,
            "OversizedRequestError",
            "MSG_SIZE_TOO_LARGE",
            "request of 1500000 bytes exceeds the limit of 1048576 bytes",
        )
    ]


def test_moments_read_in_utc_relative_to_now() -> None:
    now = 1_735_732_800_000  # 2025-01-01 12:00:00Z
    assert moment(now + 3_000, now) == "2025-01-01 12:00:03Z (in 3s)"
    assert moment(now - 600_000, now) == "2025-01-01 11:50:00Z (10min ago)"
    assert moment(now - 3 * 86_400_000, now) == "2024-12-29 12:00:00Z (3d ago)"
    assert moment(now, now) == "2025-01-01 12:00:00Z (now)"
    assert moment(None, now) is None


def test_replicas_json_and_table() -> None:
    row = ReplicaStatus("r1", 2, "removed", None, None, 1_735_732_800_000, "lease expired")
    live = ReplicaStatus("r2", 1, "active", 1_735_732_810_000, None, 1_735_732_800_000, "")
    assert replicas_json([live], 1_735_732_800_000)[0]["lease_left_ms"] == 10_000
    assert replicas_json([row], 1_735_732_800_000) == [
        {
            "replica_id": "r1",
            "epoch": 2,
            "state": "removed",
            "lease_expires_ms": None,
            "lease_left_ms": None,
            "last_heartbeat_ms": None,
            "added_ms": 1_735_732_800_000,
            "reason": "lease expired",
        }
    ]
    view = replicas_view([row], now_ms=1_735_732_800_000)
    assert view.rows == [
        ("r1", 2, "removed", None, None, "2025-01-01 12:00:00Z (now)", "lease expired")
    ]
    assert view.null == "-"
    assert "replicas run --id" in replicas_view([], 0).empty


# Printing


def test_show_prints_json_or_tables_or_the_empty_line(capsys: pytest.CaptureFixture[str]) -> None:
    views = (TableView("t", ["a"], [(1,)], "none"), TableView("u", ["b"], [], "no b rows"))
    show("json", {"k": [1, None]}, *views)
    assert json.loads(capsys.readouterr().out) == {"k": [1, None]}
    show("table", {}, *views)
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "t"
    assert out.rstrip().endswith("no b rows")
    assert "│ 1 │" in out


def test_tables_show_text_as_is_and_never_cut_it(capsys: pytest.CaptureFixture[str]) -> None:
    long = "x" * 300
    print_table("[bold]t", ["[c]"], [("[red]v", None, True), (long, 1.5, False)], null="null")
    out = capsys.readouterr().out
    assert "[bold]t" in out
    assert "[red]v" in out
    assert long in out
    assert "│ null │ true  │" in out


# --help documents the JSON by example


def _examples(command: list[str], capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    with pytest.raises(SystemExit):
        main([*command, "--help"])
    text = capsys.readouterr().out
    found = {}
    pattern = r"`collection-manager (.+?) --format json` prints, for example:\n"
    for match in re.finditer(pattern, text):
        found[match[1]], _ = json.JSONDecoder().raw_decode(text, match.end())
    return found


def test_help_shows_the_json_each_command_prints(capsys: pytest.CaptureFixture[str]) -> None:
    bucketed = dataclasses.replace(FRONTIERS, name=EXAMPLE_BUCKETED, buckets=4)
    assert _examples(["collections", "query"], capsys) == {
        "collections query compute_frontiers": query_json(FRONTIERS, EXAMPLE_SNAPSHOT),
        f"collections query {EXAMPLE_BUCKETED}": query_json(bucketed, EXAMPLE_CUT_SNAPSHOT),
    }
    assert _examples(["collections", "tail"], capsys) == {
        "collections tail compute_frontiers --since 41": tail_json(FRONTIERS, EXAMPLE_LOG),
        f"collections tail {EXAMPLE_BUCKETED} --since 12,40,7,9": cut_tail_json(
            bucketed, EXAMPLE_CUT_LOG
        ),
    }
    assert _examples(["replicas", "list"], capsys) == {
        "replicas list": replicas_json(EXAMPLE_REPLICAS, EXAMPLE_NOW)
    }
    status = _examples(["status"], capsys)["status"]
    assert status["consumer"] == EXAMPLE_CONSUMER
    assert status["unpublished_dead_letters"] == EXAMPLE_UNPUBLISHED
    assert _examples(["collections"], capsys) == {}  # a group: its commands show theirs
    assert list(_examples(["collections", "list"], capsys)) == ["collections list"]
    described = _examples(["collections", "show"], capsys)
    assert list(described) == [
        "collections show compute_frontiers",
        "collections show frontiers_by_replica",
    ]
    bucketed = described["collections show frontiers_by_replica"]
    assert bucketed["buckets"] == 4 and bucketed["bucket_column"] == "replica_id"
    assert [b["rows"] for b in bucketed["bucket_rows"]] == [0, 2, 0, 0]


def test_documented_json_shapes_are_stable(capsys: pytest.CaptureFixture[str]) -> None:
    query = _examples(["collections", "query"], capsys)["collections query compute_frontiers"]
    assert list(query) == ["collection", "as_of", "rows"]
    assert list(query["rows"][0]) == ["row", "count"]
    tail = _examples(["collections", "tail"], capsys)[
        "collections tail compute_frontiers --since 41"
    ]
    assert list(tail[0]) == ["time", "row", "diff"]
    bucketed = _examples(["collections", "query"], capsys)[f"collections query {EXAMPLE_BUCKETED}"]
    assert list(bucketed) == ["collection", "as_of", "rows"] and bucketed["as_of"] == "12,40,7,9"
    cut_tail = _examples(["collections", "tail"], capsys)[
        f"collections tail {EXAMPLE_BUCKETED} --since 12,40,7,9"
    ]
    assert list(cut_tail[0]) == ["bucket", "time", "row", "diff", "as_of"]
    status = _examples(["status"], capsys)["status"]
    assert list(status) == [
        "consumer",
        "controller",
        "other_topics",
        "unpublished_dead_letters",
        "collections",
        "sinks",
    ]
    assert list(status["consumer"]["lag"][0]) == ["topic", "partition", "lag"]
    assert list(status["unpublished_dead_letters"]) == ["count", "newest"]
    assert list(status["unpublished_dead_letters"]["newest"][0]) == [
        "topic",
        "partition",
        "offset",
        "error",
        "publish_error",
        "reason",
    ]
    assert list(status["collections"][0]) == [
        "name",
        "rows",
        "time",
        "counters",
        "buckets",
        "bucket_column",
        "bucket_rows",
    ]
    assert list(status["collections"][0]["counters"]) == list(SHOWN_COUNTERS)
    replica = _examples(["replicas", "list"], capsys)["replicas list"][0]
    assert list(replica) == [
        "replica_id",
        "epoch",
        "state",
        "lease_expires_ms",
        "lease_left_ms",
        "last_heartbeat_ms",
        "added_ms",
        "reason",
    ]
    assert json_text({"b": 1, "a": None}) == '{\n  "b": 1,\n  "a": null\n}'
