"""The command line and buckets, without services: ``--buckets`` and ``--bucket-column``
are checked before anything connects, with the bound named; a collection that exists with
other buckets is refused in one line before anything is written; ``describe`` and
``status`` show each bucket's rows and the collection's sums."""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any, cast

import pytest

from collection_manager.answers.models import BucketRows
from collection_manager.cli import collections as collections_cli
from collection_manager.cli.buckets import bucket_change, create_checked, keep_buckets
from collection_manager.cli.collections import describe_json, describe_tables
from collection_manager.cli.main import build_parser, main
from collection_manager.cli.partitions import KEY_HASH
from collection_manager.cli.status import collection_info, consumer_summary, status_json
from collection_manager.cli.status_views import status_tables
from collection_manager.core.errors import CollectionManagerError, UnknownCollectionError
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.consumer_status import ConsumerRecord
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_spec

ROW_SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
    ],
}
PLAIN = CollectionSpec("sizes", ROW_SCHEMA, ("replica_id",))


def _bucketed(buckets: int = 4, column: str = "replica_id") -> CollectionSpec:
    return dataclasses.replace(PLAIN, buckets=buckets, bucket_column=column)


@pytest.fixture
def schema(tmp_path: Path) -> Path:
    path = tmp_path / "sizes.avsc"
    path.write_text(json.dumps(ROW_SCHEMA))
    return path


@pytest.fixture
def no_services(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Whatever connects fails the test: the checks come first."""

    def connect(**_kwargs: Any) -> RedisStore:
        raise AssertionError("connected before checking the arguments")

    monkeypatch.setattr(collections_cli, "store_from_env", connect)


@pytest.mark.parametrize("given", ["0", "65", "-1", "four"])
@pytest.mark.usefixtures("no_services")
def test_buckets_outside_the_bound_are_refused_naming_it(
    given: str, schema: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["collections", "create", "sizes", "--schema", str(schema), "--buckets", given])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: argument --buckets: a collection has 1 to 64 (MAX_BUCKETS) buckets, not "
        f"'{given}'\n"
    )
    assert "Traceback" not in err


@pytest.mark.usefixtures("no_services")
def test_a_bucket_column_without_buckets_is_a_usage_error(
    schema: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["collections", "create", "sizes", "--schema", str(schema), "--bucket-column", "worker"]
    assert main(argv) == 2
    assert capsys.readouterr().err.startswith(
        "error: --bucket-column worker picks among buckets: give --buckets N as well "
        "(N from 2 to 64, MAX_BUCKETS)\n"
    )


@pytest.mark.parametrize(
    ("column", "found"),
    [("nosuch", "missing"), ("note", "string, nullable=True")],
)
@pytest.mark.usefixtures("no_services")
def test_a_bucket_column_that_cannot_pick_buckets_is_one_line(
    column: str, found: str, schema: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["collections", "create", "sizes", "--schema", str(schema), "--buckets", "4"]
    assert main([*argv, "--bucket-column", column]) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: bucket column {column!r} of sizes must be a non-nullable string or long "
        f"column, not {found}"
    )
    assert err.count("\n") == 1


def test_create_help_names_the_bound_and_the_defaults() -> None:
    parser = build_parser()
    texts = []
    for argv in (["collections", "create"], ["collections", "create-introspection"]):
        with pytest.raises(SystemExit):
            parser.parse_args([*argv, "--help"])
    for action in _subparser(parser, "collections", "create")._actions:
        if action.dest in ("buckets", "bucket_column"):
            texts.append(" ".join(str(action.help).split()))
    assert any("1 to 64 (MAX_BUCKETS)" in text and "default 1" in text for text in texts)
    assert any("default replica_id" in text for text in texts)
    introspection = _subparser(parser, "collections", "create-introspection")
    (buckets,) = [a for a in introspection._actions if a.dest == "buckets"]
    assert "1 to 64 (MAX_BUCKETS)" in str(buckets.help) and buckets.default is None


def _subparser(parser: Any, *path: str) -> Any:
    for word in path:
        (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        parser = action.choices[word]
    return parser


def test_a_change_of_buckets_names_both_layouts_and_the_offline_path() -> None:
    problem = bucket_change(_bucketed(4), _bucketed(8))
    assert problem == (
        "collection sizes exists with 4 buckets by replica_id, not 8 buckets by replica_id: "
        "the buckets of a live collection cannot change. Offline: stop its writers, "
        "`collection-manager collections drop sizes`, create it with --buckets 8, then "
        "restart the agents, which publish fresh snapshots (docs/howto/buckets.md, Changing N)"
    )
    assert "exists with 1 bucket, not 4 buckets by worker" in str(
        bucket_change(PLAIN, _bucketed(4, "worker"))
    )
    assert "exists with 4 buckets by replica_id, not 1 bucket" in str(
        bucket_change(_bucketed(4), PLAIN)
    )
    assert "not 4 buckets by worker" in str(bucket_change(_bucketed(4), _bucketed(4, "worker")))
    assert bucket_change(_bucketed(4), _bucketed(4)) is None
    assert bucket_change(PLAIN, PLAIN) is None


class _Store:
    """The catalog part of RedisStore, and each unit's size, counters and TTL rows."""

    def __init__(self, *specs: CollectionSpec) -> None:
        self.catalog = {spec.name: spec for spec in specs}
        self.created: list[CollectionSpec] = []

    def spec(self, name: str) -> CollectionSpec:
        collection, _, bucket = name.partition("#")
        if collection not in self.catalog:
            raise UnknownCollectionError(f"unknown collection {collection!r}")
        spec = self.catalog[collection]
        return spec.unit(int(bucket)) if bucket else spec

    def create_collection(self, spec: CollectionSpec) -> None:
        self.catalog[spec.name] = spec
        self.created.append(spec)

    def size(self, unit: str) -> tuple[int, int]:
        bucket = int(unit.partition("#")[2] or 0)
        return 10 * bucket, bucket + 1

    def stats(self, unit: str) -> dict[str, int]:
        return {"requests": 1, "updates": 2}

    def ttl_summary(self, unit: str) -> tuple[int, int | None]:
        bucket = int(unit.partition("#")[2] or 0)
        return (1, 1000 - bucket) if bucket % 2 else (0, None)


def test_creating_refuses_other_buckets_before_writing_anything() -> None:
    store = _Store(_bucketed(4))
    other = dataclasses.replace(introspection_spec("compute_frontiers"), buckets=2)
    with pytest.raises(CollectionManagerError, match="exists with 4 buckets by replica_id, not 8"):
        create_checked(cast(RedisStore, store), [other, _bucketed(8)])
    assert store.created == []


def test_creating_again_with_one_bucket_redefines_as_before() -> None:
    store = _Store(PLAIN)
    wider = dataclasses.replace(PLAIN, indexed_columns=("replica_id", "worker"))
    create_checked(cast(RedisStore, store), [wider])
    assert store.catalog["sizes"].indexed_columns == ("replica_id", "worker")
    create_checked(cast(RedisStore, store), [PLAIN])
    assert store.created == [wider, PLAIN]


def test_create_introspection_without_buckets_keeps_each_existing_ones() -> None:
    frontiers = introspection_spec("compute_frontiers")
    store = _Store(dataclasses.replace(frontiers, buckets=8))
    kept = keep_buckets(cast(RedisStore, store), frontiers)
    assert (kept.buckets, kept.bucket_column) == (8, "replica_id")
    sizes = introspection_spec("arrangement_sizes")
    assert keep_buckets(cast(RedisStore, store), sizes) == sizes  # new: one bucket


def test_a_bucketed_collections_info_sums_its_buckets() -> None:
    store = _Store(_bucketed(4))
    info = collection_info(cast(RedisStore, store), "sizes")
    assert info.buckets == tuple(BucketRows(b, 10 * b, b + 1) for b in range(4))
    assert (info.rows, info.time) == (60, 10)
    assert (info.counters["requests"], info.counters["updates"]) == (4, 8)
    assert (info.ttl_rows, info.next_expiry) == (2, 997)
    described = describe_json(info)
    assert (described["buckets"], described["bucket_column"]) == (4, "replica_id")
    assert described["bucket_rows"][3] == {"bucket": 3, "rows": 30, "time": 4}
    columns, _counters, buckets = describe_tables(info)
    assert columns.title.startswith("sizes: 60 rows in 4 buckets by replica_id; 2 rows with")
    # Created before partition assignments: its keys' hash places each bucket.
    assert buckets.rows == [("sizes", b, 10 * b, b + 1, "hash") for b in range(4)]
    assert buckets.title == f"sizes: rows per bucket, placed {KEY_HASH}"
    assert described["partitioning"] is None


def test_an_unbucketed_collections_info_and_json_say_one_bucket() -> None:
    info = collection_info(cast(RedisStore, _Store(PLAIN)), "sizes")
    assert (info.rows, info.time, info.buckets) == (0, 1, ())
    assert len(describe_tables(info)) == 2
    described = describe_json(info)
    assert (described["buckets"], described["bucket_column"], described["bucket_rows"]) == (
        1,
        None,
        [],
    )


def test_status_shows_the_sums_and_each_buckets_rows_of_bucketed_ones() -> None:
    store = cast(RedisStore, _Store(PLAIN, dataclasses.replace(_bucketed(3), name="b")))
    plain, bucketed = collection_info(store, "sizes"), collection_info(store, "b")
    consumer = consumer_summary(ConsumerRecord.parse({}))
    tables = status_tables(consumer, [plain, bucketed], recorded=False)
    collections, per_bucket = tables[-2], tables[-1]
    assert [row[:3] for row in collections.rows] == [("sizes", 0, 1), ("b", 30, 6)]
    assert per_bucket.rows == [
        ("b", 0, 0, 1, "hash"),
        ("b", 1, 10, 2, "hash"),
        ("b", 2, 20, 3, "hash"),
    ]
    assert len(status_tables(consumer, [plain], recorded=False)) == 2  # no bucket table
    entries = status_json(consumer, {"count": 0, "newest": []}, [plain, bucketed])["collections"]
    assert (entries[0]["buckets"], entries[0]["bucket_column"], entries[0]["bucket_rows"]) == (
        1,
        None,
        [],
    )
    assert entries[1]["buckets"] == 3 and len(entries[1]["bucket_rows"]) == 3
    assert list(entries[1]["counters"]) == list(SHOWN_COUNTERS)
