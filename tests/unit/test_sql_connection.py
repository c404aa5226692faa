"""Which Redis the Spark SQL data sources read: the option, else the one the CLI would use
(``CM_REDIS_URL``, else the Redis ``infra up`` recorded in the state directory), so the
docs' examples run beside ``infra up`` with no option. No services: the record names this
test's own process, which is as alive as a recorded Redis would be."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collection_manager.config import InfraConfig
from collection_manager.config.services import Service, save_services, start_time
from collection_manager.sql.options import Connection, OptionError

RECORDED = "redis://127.0.0.1:6399/0"


@pytest.fixture
def state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    return tmp_path


def _record_redis(state_dir: Path) -> None:
    pid = os.getpid()
    service = Service("redis", pid, RECORDED, "redis.log", "redis-server", start_time(pid))
    save_services(InfraConfig(state_dir=state_dir).services_file, {"redis": service})


def test_without_an_option_the_redis_of_infra_up_is_read(state_dir: Path) -> None:
    _record_redis(state_dir)
    assert Connection.of({"path": "error_counts"}) == Connection(RECORDED, "error_counts")


def test_the_option_and_then_cm_redis_url_come_first(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record_redis(state_dir)
    monkeypatch.setenv("CM_REDIS_URL", "redis://configured:6379/0")
    assert Connection.of({"path": "c"}).url == "redis://configured:6379/0"
    assert Connection.of({"path": "c", "Redis.URL": "redis://given:1/0"}).url == "redis://given:1/0"


def test_no_redis_anywhere_is_one_line_saying_how_to_get_one(state_dir: Path) -> None:
    with pytest.raises(OptionError) as failed:
        Connection.of({"path": "c"})
    assert str(failed.value) == (
        f"no redis to use: start one with `collection-manager infra up` (state dir "
        f"{state_dir}) or set CM_REDIS_URL, or give option redis.url"
    )
