"""``collections tail --since 2s`` on a real Redis: only the changes applied in the last
duration, by the clock each change-log entry records (Redis's ``TIME``).

Time passes between two applies by waiting until Redis's own clock is past the first
apply's by more than the duration; the test asserts which changes print, never how long
anything took.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from typing import Any, cast

import pytest
import redis as redis_lib

from collection_manager.cli.main import main
from collection_manager.core.requests import Append
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.storage.change_log import LogEntries
from collection_manager.storage.keys import LOG_CLOCK_FIELD, CollectionKeys
from collection_manager.storage.log_clock import redis_now_ms
from collection_manager.storage.store import RedisStore
from tests.integration.own_services import OwnService
from tests.support import assert_eventually

SCHEMA = {
    "type": "record",
    "name": "since",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "n", "type": "long"},
    ],
}
# Past the first apply by this much before the second: more than --since 2s, so the first
# is outside it, while the second stays inside it for the 2 s the tail has to start.
APART_MS = 3_000


@pytest.fixture
def store(
    module_redis: OwnService,
    module_redis_client: redis_lib.Redis,
    monkeypatch: pytest.MonkeyPatch,
) -> RedisStore:
    monkeypatch.setenv("CM_REDIS_URL", module_redis.address)
    return RedisStore(module_redis_client)


@pytest.fixture
def spec(
    store: RedisStore, unique: str, request: pytest.FixtureRequest
) -> Iterator[CollectionSpec]:
    buckets = getattr(request, "param", 1)
    spec = CollectionSpec(f"since-{unique}", SCHEMA, ("replica_id",), buckets=buckets)
    store.create_collection(spec)
    yield spec
    store.drop_collection(spec.name)


def _apply(store: RedisStore, spec: CollectionSpec, offset: int, rows: Sequence[Row]) -> None:
    request = Append(spec.name, "w", 1, tuple((row, 1) for row in rows), 0)
    parts = route_append(request, spec) if spec.buckets > 1 else [request]
    store.apply_requests("t", 0, [(offset + i, part) for i, part in enumerate(parts)])


def _newest_clock(client: redis_lib.Redis, spec: CollectionSpec) -> int:
    units = [spec.name] if spec.buckets == 1 else [u.name for u in spec.units()]
    clocks = []
    for unit in units:
        for _, fields in cast(LogEntries, client.xrevrange(CollectionKeys(unit).log, count=1)):
            clocks.append(int(fields[LOG_CLOCK_FIELD.encode()]))
    return max(clocks)


def _wait_past(client: redis_lib.Redis, clock_ms: int) -> None:
    def past() -> None:
        assert redis_now_ms(client) > clock_ms + APART_MS

    assert_eventually(past, timeout=30.0, interval=0.2)


def _tail(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    capsys.readouterr()
    assert main(["collections", "tail", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("spec", [1, 3], indirect=True, ids=["unbucketed", "bucketed"])
def test_since_a_duration_prints_only_the_changes_applied_in_it(
    capsys: pytest.CaptureFixture[str],
    store: RedisStore,
    module_redis_client: redis_lib.Redis,
    spec: CollectionSpec,
) -> None:
    older = [(f"old{n}", n) for n in range(6)]
    _apply(store, spec, 0, older)
    _wait_past(module_redis_client, _newest_clock(module_redis_client, spec))
    newer = [(f"new{n}", n) for n in range(6)]
    _apply(store, spec, 100, newer)

    recent = _tail(capsys, spec.name, "--since", "2s", "-n", "100")
    assert sorted(tuple(c["row"].values()) for c in recent) == sorted(newer)
    every = _tail(capsys, spec.name, "--since", "1d", "-n", "100")
    assert sorted(tuple(c["row"].values()) for c in every) == sorted(older + newer)
    # -n bounds them, oldest first, as --since a time does.
    if spec.buckets == 1:
        first = _tail(capsys, spec.name, "--since", "1d", "-n", "2")
        assert [c["row"]["replica_id"] for c in first] == ["old0", "old1"]


def test_a_duration_in_another_unit_is_refused_naming_the_units(
    capsys: pytest.CaptureFixture[str], spec: CollectionSpec
) -> None:
    with pytest.raises(SystemExit) as usage:
        main(["collections", "tail", spec.name, "--since", "10ms"])
    err = capsys.readouterr().err
    assert usage.value.code == 2 and "s, m, h or d (30s, 5m, 2h, 1d)" in err
