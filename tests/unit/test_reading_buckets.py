"""Reading a bucketed collection, the pure parts: how ``query`` and ``tail`` print a cut,
what ``--since`` takes, and how the Spark SQL sources plan a read at one cut (no services).

An unbucketed collection's answers must stay exactly as they were: ``as_of`` a number,
``--since`` a time, offsets ``{"time": t}``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from collections.abc import Callable
from typing import Any

import pytest
import redis

from collection_manager.cli.query import query_json, query_table
from collection_manager.cli.tail_since import at_least, parse_since, since_argument
from collection_manager.cli.tail_views import cut_tail_json, cut_tail_table
from collection_manager.config.errors import UsageError
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import Cut
from collection_manager.core.filters import eq, in_
from collection_manager.core.specs import Row
from collection_manager.core.stepped_read import Change
from collection_manager.sql import changes as changes_module
from collection_manager.sql import snapshots as snapshots_module
from collection_manager.sql.changes import ChangesPart, ChangesReader, LogTrimmedError
from collection_manager.sql.options import Connection, KeptClient, OptionError
from collection_manager.sql.schema import spark_schema
from collection_manager.sql.snapshots import CUT_ADDED, SnapshotPart, SnapshotReader
from collection_manager.storage.reads import CutChanges, Snapshot
from collection_manager.storage.step_reads import ReadPart
from schemas.introspection import introspection_spec
from tests.support import recorded_sleeps

FRONTIERS = introspection_spec("compute_frontiers")
BUCKETED = dataclasses.replace(FRONTIERS, name="fb", buckets=4)
ROWS: dict[Row, int] = {("r1", "u1", 0, 41): 1, ("r2", "u1", 1, None): 2}

# query


def test_an_unbucketed_query_prints_its_time_as_a_number_as_before() -> None:
    snapshot = Snapshot(ROWS, 42)
    assert query_json(FRONTIERS, snapshot)["as_of"] == 42
    text = json.dumps(query_json(FRONTIERS, snapshot))
    assert '"as_of": 42' in text
    assert query_table(FRONTIERS, snapshot, None).title == "compute_frontiers at time 42: 2 rows"


def test_a_bucketed_query_prints_its_cut_as_as_of() -> None:
    snapshot = Snapshot(ROWS, 68, Cut((12, 40, 7, 9)))
    found = query_json(BUCKETED, snapshot)
    assert list(found) == ["collection", "as_of", "rows"]
    assert found["as_of"] == "12,40,7,9"
    assert [entry["count"] for entry in found["rows"]] == [1, 2]
    title = query_table(BUCKETED, snapshot, eq("replica_id", "r1")).title
    assert title == "fb at cut 12,40,7,9: 2 rows matching replica_id = 'r1'"
    empty = query_table(BUCKETED, Snapshot({}, 0, Cut((0, 0, 0, 0))), None)
    assert empty.empty == "fb at cut 0,0,0,0: no rows (nothing applied to it yet)"


# tail --since


def test_since_takes_a_time_or_times_joined_by_commas() -> None:
    assert since_argument("0") == "0"
    assert since_argument("12,40,7") == "12,40,7"
    with pytest.raises(argparse.ArgumentTypeError, match="times start at 0, not -5"):
        since_argument("-5")
    with pytest.raises(argparse.ArgumentTypeError, match="not '12;4'"):
        since_argument("12;4")
    with pytest.raises(argparse.ArgumentTypeError, match="times start at 0, not -1"):
        since_argument("3,-1")


def test_since_is_a_time_of_an_unbucketed_collection_and_a_cut_of_a_bucketed_one() -> None:
    assert parse_since(None, FRONTIERS) is None
    assert parse_since("41", FRONTIERS) == 41
    assert parse_since(None, BUCKETED) is None
    assert parse_since("12,40,7,9", BUCKETED) == Cut((12, 40, 7, 9))
    assert parse_since("0", BUCKETED) == Cut((0, 0, 0, 0))  # the start, as for a time


def test_since_of_the_wrong_shape_names_the_shape_expected() -> None:
    with pytest.raises(UsageError) as one_bucket:
        parse_since("1,2", FRONTIERS)
    assert "compute_frontiers has one bucket: give a time (0 or more)" in str(one_bucket.value)
    with pytest.raises(UsageError) as short:
        parse_since("12,40", BUCKETED)
    assert str(short.value) == (
        "argument --since: '12,40' is no cut of 4 buckets: give 4 times >= 0 joined by "
        "commas, as an answer's as_of prints them"
    )
    with pytest.raises(UsageError, match="no cut of 4 buckets"):
        parse_since("41", BUCKETED)


# tail


def _changes(limit_reached: bool = False) -> CutChanges:
    changes: list[tuple[int, Change[Row]]] = [
        (0, Change(13, ("r1", "u1", 0, 40), -1)),
        (0, Change(13, ("r1", "u1", 0, 41), 1)),
        (2, Change(8, ("r2", "u1", 1, None), 1)),
    ]
    return CutChanges(changes[:2] if limit_reached else changes, Cut((13, 40, 8, 9)))


def test_tail_of_a_bucketed_collection_names_each_change_s_bucket_and_the_cut() -> None:
    found = cut_tail_json(BUCKETED, _changes())
    assert [(c["bucket"], c["time"], c["diff"]) for c in found] == [
        (0, 13, -1),
        (0, 13, 1),
        (2, 8, 1),
    ]
    assert {c["as_of"] for c in found} == {"13,40,8,9"}
    assert found[2]["row"] == {
        "replica_id": "r2",
        "export_id": "u1",
        "worker_id": 1,
        "frontier": None,
    }
    table = cut_tail_table(BUCKETED, _changes(), Cut((12, 40, 7, 9)), limit=100)
    assert table.title == "fb: 3 changes after cut 12,40,7,9, through cut 13,40,8,9"
    assert list(table.columns) == [
        "bucket",
        "time",
        *BUCKETED.column_names,
        "diff",
        "as_of",
    ]
    assert table.rows[2] == (2, 8, "r2", "u1", 1, None, 1, "13,40,8,9")


def test_a_limited_tail_says_where_to_go_on_and_an_empty_one_the_cut_now() -> None:
    limited = cut_tail_table(BUCKETED, _changes(True), Cut((12, 40, 7, 9)), limit=2)
    assert limited.title.endswith("(-n 2 reached; go on with --since 13,40,8,9)")
    nothing = CutChanges([], Cut((12, 40, 7, 9)))
    empty = cut_tail_table(BUCKETED, nothing, Cut((12, 40, 7, 9)), limit=100)
    assert empty.rows == []
    assert empty.empty == "fb: no changes after cut 12,40,7,9 (its cut now is 12,40,7,9)"


def test_tail_goes_on_from_the_cut_asked_for_where_a_bucket_is_behind_it() -> None:
    """A query's cut during a delete in progress is ahead of the readable times tail reads
    to: what it prints to go on from never goes back behind what was asked for."""
    behind = CutChanges([], Cut((12, 40, 7, 9)))
    assert at_least(behind, Cut((12, 41, 7, 0))).cut == Cut((12, 41, 7, 9))


# Spark SQL


class Answering(Connection):
    """A connection whose reads get no client: the functions they call are replaced."""

    def read(self, call: Callable[[redis.Redis], Any]) -> Any:
        return call(None)  # type: ignore[arg-type]


def _snapshot_reader(
    spec: Any, monkeypatch: pytest.MonkeyPatch, options: dict[str, str] | None = None
) -> SnapshotReader:
    monkeypatch.setattr(snapshots_module, "read_cut", lambda _client, _spec: Cut((5, 0, 7, 2)))
    monkeypatch.setattr(snapshots_module, "visible_time", lambda _client, _name: 42)
    return SnapshotReader(Answering("redis://x", spec.name), spec, options or {})


def test_an_unbucketed_snapshot_reads_at_one_time_as_before(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = _snapshot_reader(FRONTIERS, monkeypatch, {"partitions": "3"})
    parts = reader.partitions()
    assert parts == [SnapshotPart(ReadPart(None, None, 3, slot), 42) for slot in range(3)]
    schema = spark_schema(FRONTIERS, after=("multiplicity", "as_of"))
    assert schema["as_of"].dataType.typeName() == "long"


def test_a_bucketed_snapshot_has_a_partition_per_bucket_and_share_all_at_one_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    reader = _snapshot_reader(BUCKETED, monkeypatch, {"partitions": "2"})
    parts = reader.partitions()
    assert [(p.bucket, p.part.slot, p.as_of) for p in parts if isinstance(p, SnapshotPart)] == [
        (0, 0, 5),
        (0, 1, 5),
        (1, 0, 0),
        (1, 1, 0),
        (2, 0, 7),
        (2, 1, 7),
        (3, 0, 2),
        (3, 1, 2),
    ]
    assert {p.cut for p in parts if isinstance(p, SnapshotPart)} == {"5,0,7,2"}
    schema = spark_schema(BUCKETED, after=("multiplicity", "as_of"), text=CUT_ADDED)
    assert schema["as_of"].dataType.typeName() == "string"


def test_a_filter_that_pins_buckets_reads_only_those(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = _snapshot_reader(BUCKETED, monkeypatch)
    spark_in = pytest.importorskip("pyspark.sql.datasource").In
    list(reader.pushFilters([spark_in(("replica_id",), ("r1", "r2", "r3"))]))
    parts = [p for p in reader.partitions() if isinstance(p, SnapshotPart)]
    pinned = sorted({bucket_of(r, 4) for r in ("r1", "r2", "r3")})
    assert sorted({p.bucket or 0 for p in parts}) == pinned
    for part in parts:  # one per index set in each bucket; each at its bucket's time
        assert part.part.where == in_("replica_id", ["r1", "r2", "r3"])
        assert part.as_of == (5, 0, 7, 2)[part.bucket or 0]


def _changes_reader(spec: Any, monkeypatch: pytest.MonkeyPatch, **options: str) -> ChangesReader:
    reader = ChangesReader(Answering("redis://x", spec.name), spec, options)
    # Readable times, and those readers see (a delete in progress in bucket 1, at time 1).
    cuts = {True: Cut((5, 0, 7, 2)), False: Cut((5, 1, 7, 2))}
    monkeypatch.setattr(reader, "_cut", lambda readable=True: cuts[readable])
    monkeypatch.setattr(reader, "_readable", lambda: 42)
    return reader


def test_an_unbucketed_stream_keeps_its_offsets_in_time(monkeypatch: pytest.MonkeyPatch) -> None:
    reader = _changes_reader(FRONTIERS, monkeypatch, startingTime="earliest")
    assert reader.initialOffset() == {"time": 0}
    assert reader.latestOffset({"time": 0}, None) == {"time": 42}
    assert reader.partitions({"time": 3}, {"time": 42}) == [ChangesPart(3, 42)]
    assert reader.partitions({"time": 42}, {"time": 42}) == []


def test_a_bucketed_stream_s_offsets_are_cuts_and_a_batch_a_partition_per_bucket(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _changes_reader(BUCKETED, monkeypatch).initialOffset() == {"cut": [5, 0, 7, 2]}
    reader = _changes_reader(BUCKETED, monkeypatch, startingTime="earliest")
    assert reader.initialOffset() == {"cut": [0, 0, 0, 0]}
    assert reader.latestOffset({"cut": [1, 0, 7, 0]}, None) == {"cut": [5, 0, 7, 2]}
    parts = reader.partitions({"cut": [1, 0, 7, 0]}, {"cut": [5, 0, 7, 2]})
    assert parts == [ChangesPart(1, 5, 0), ChangesPart(0, 2, 3)]
    given = _changes_reader(BUCKETED, monkeypatch, startingTime="4,0,6,1")
    assert given.initialOffset() == {"cut": [4, 0, 6, 1]}


def test_a_bucketed_stream_refuses_offsets_and_starts_of_another_shape(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(OptionError, match="must be latest, earliest or a cut: 4 times"):
        _changes_reader(BUCKETED, monkeypatch, startingTime="41").initialOffset()
    reader = _changes_reader(BUCKETED, monkeypatch)
    with pytest.raises(LogTrimmedError, match="dropped and made again with other buckets"):
        reader.latestOffset({"time": 3}, None)
    with pytest.raises(LogTrimmedError, match="before this query's offset 6,0,7,2"):
        reader.latestOffset({"cut": [6, 0, 7, 2]}, None)
    # Started from a snapshot's cut, at the time of the delete in progress: it waits there.
    assert reader.latestOffset({"cut": [5, 1, 7, 2]}, None) == {"cut": [5, 1, 7, 2]}
    assert reader.latestOffset({"cut": [4, 1, 7, 2]}, None) == {"cut": [5, 1, 7, 2]}
    with pytest.raises(LogTrimmedError, match="whose offsets are a time"):
        _changes_reader(FRONTIERS, monkeypatch).latestOffset({"cut": [1, 2, 3, 4]}, None)


def test_a_bucketed_stream_s_rows_name_their_bucket() -> None:
    schema = spark_schema(BUCKETED, changes_module.CUT_BEFORE, changes_module.AFTER)
    assert schema.fieldNames()[:3] == ["bucket", "time", "replica_id"]
    assert schema.fieldNames()[-1] == "diff"


# the read timeout of the data sources


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    return recorded_sleeps(monkeypatch)


def test_a_data_source_read_waits_through_a_failover_and_fails_at_once_when_nobody_answers(
    monkeypatch: pytest.MonkeyPatch, no_sleep: list[float]
) -> None:
    calls: list[int] = []

    class Client:
        def close(self) -> None:
            pass

    def flaky(_client: Any) -> str:
        calls.append(1)
        if len(calls) <= 2:
            raise redis.ConnectionError("the slot's primary is gone")
        return "rows"

    connection = Connection("redis://:secret@127.0.0.1:1", "c")
    monkeypatch.setattr(Connection, "client", lambda self: Client())
    monkeypatch.setattr("collection_manager.sql.options.any_node_answers", lambda url: True)
    assert connection.read(flaky) == "rows" and len(no_sleep) == 2
    assert KeptClient(connection).read(lambda _client: "kept") == "kept"

    calls.clear()
    monkeypatch.setattr("collection_manager.sql.options.any_node_answers", lambda url: False)
    with pytest.raises(Exception) as failed:
        connection.read(flaky)
    assert str(failed.value).startswith("Redis at redis://:***@127.0.0.1:1 does not answer")
    assert len(calls) == 1


def test_the_data_sources_take_a_timeout_option() -> None:
    assert Connection.of({"path": "c", "redis.url": "redis://x"}).timeout_s == 30.0
    assert Connection.of({"path": "c", "redis.url": "redis://x", "timeout": "0"}).timeout_s == 0
    with pytest.raises(OptionError, match="option timeout must be 0 or more seconds, not '-1'"):
        Connection.of({"path": "c", "redis.url": "redis://x", "timeout": "-1"})


def test_query_of_a_bucketed_collection_waits_through_a_failover_and_prints_the_cut(
    monkeypatch: pytest.MonkeyPatch, no_sleep: list[float], capsys: pytest.CaptureFixture[str]
) -> None:
    """``query --timeout`` covers the whole bucketed read: the cut and every bucket."""
    from collection_manager.cli import query as cli_query

    class Store:
        failures = 2

        def collections(self) -> list[str]:
            return ["fb"]

        def spec(self, name: str) -> Any:
            return BUCKETED

        def stepped_snapshot(self, name: str, where: Any, limit: Any) -> Snapshot:
            if self.failures:
                self.failures -= 1
                raise redis.ConnectionError("no primary serves bucket 2's slot yet")
            return Snapshot(ROWS, 68, Cut((12, 40, 7, 9)))

    store = Store()
    monkeypatch.setattr(cli_query, "store_from_env", lambda: store)
    monkeypatch.setattr(cli_query, "_redis_answers", lambda: True)
    from collection_manager.cli.main import main

    assert main(["collections", "query", "fb", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["as_of"] == "12,40,7,9"
    assert store.failures == 0 and 0.1 in no_sleep  # tried again, after a pause
