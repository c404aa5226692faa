"""``collections tail -n 4`` of a bucketed collection on a real Redis prints at most 4
changes in all, the newest or those since a cut or a duration; going on from the as_of it
prints reads every change (a time cut short is read again whole), and then stops."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.cli.main import main
from collection_manager.core.requests import Append
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from tests.integration.own_services import OwnService

SCHEMA = {
    "type": "record",
    "name": "counted",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "n", "type": "long"},
    ],
}
APPENDS, ROWS = 12, 3  # at most 3 changes of a time in a bucket: -n 4 always goes on


@pytest.fixture
def spec(
    module_redis: OwnService,
    module_redis_client: redis_lib.Redis,
    monkeypatch: pytest.MonkeyPatch,
    unique: str,
) -> Iterator[CollectionSpec]:
    monkeypatch.setenv("CM_REDIS_URL", module_redis.address)
    store = RedisStore(module_redis_client)
    spec = CollectionSpec(f"counted-{unique}", SCHEMA, ("replica_id",), buckets=4)
    store.create_collection(spec)
    offset = 0
    for a in range(APPENDS):
        rows = tuple(((f"r{a}-{i}", a), 1) for i in range(ROWS))
        parts = route_append(Append(spec.name, "w", 1, rows, 0), spec)
        store.apply_requests("t", 0, [(offset + i, part) for i, part in enumerate(parts)])
        offset += len(parts)
    yield spec
    store.drop_collection(spec.name)


def _tail(capsys: pytest.CaptureFixture[str], *argv: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert main(["collections", "tail", *argv, "--format", "json"]) == 0
    return list(json.loads(capsys.readouterr().out))


def _change(c: dict[str, Any]) -> tuple[int, int, str, int]:
    return c["bucket"], c["time"], c["row"]["replica_id"], c["diff"]


def test_minus_n_4_prints_4_changes_newest_since_a_cut_and_since_a_duration(
    capsys: pytest.CaptureFixture[str], spec: CollectionSpec
) -> None:
    assert len(_tail(capsys, spec.name, "-n", "4")) == 4
    assert len(_tail(capsys, spec.name, "--since", "0", "-n", "4")) == 4
    assert len(_tail(capsys, spec.name, "--since", "5m", "-n", "4")) == 4
    every = _tail(capsys, spec.name, "--since", "0", "-n", "1000")
    assert len(every) == APPENDS * ROWS
    newest = _tail(capsys, spec.name, "-n", str(APPENDS * ROWS))
    assert {_change(c) for c in newest} == {_change(c) for c in every}


def test_going_on_from_the_as_of_printed_reads_every_change_and_ends(
    capsys: pytest.CaptureFixture[str], spec: CollectionSpec
) -> None:
    seen: set[tuple[int, int, str, int]] = set()
    since, pages = "0", 0
    while True:
        page = _tail(capsys, spec.name, "--since", since, "-n", "4")
        assert len(page) <= 4
        if not page:
            break
        pages += 1
        assert pages <= APPENDS * ROWS  # every page moves the cut on
        seen |= {_change(c) for c in page}
        since = page[0]["as_of"]
    every = _tail(capsys, spec.name, "--since", "0", "-n", "1000")
    assert seen == {_change(c) for c in every}
