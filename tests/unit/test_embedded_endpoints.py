"""Which Kafka and Redis an ``EmbeddedReplica`` uses: the arguments, else the ones the
CLI's commands use (``CM_KAFKA_BOOTSTRAP`` / ``CM_REDIS_URL``, else the services ``infra
up`` recorded in the state directory). No services: the record names this test's own
process, which is as alive as a recorded broker would be."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from collection_manager.config import InfraConfig
from collection_manager.config.services import Service, save_services, start_time
from collection_manager.core.errors import InfrastructureError
from producers.embedded import EmbeddedReplica, _endpoints
from producers.sources.plugin import SourceCollection, field

KAFKA = "127.0.0.1:9399"
REDIS = "redis://127.0.0.1:6399/0"


@pytest.fixture
def state_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.delenv("CM_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    return tmp_path


def _record(state_dir: Path, *names: str) -> None:
    pid, started = os.getpid(), start_time(os.getpid())
    addresses = {"kafka": KAFKA, "redis": REDIS}
    services = {n: Service(n, pid, addresses[n], f"{n}.log", n, started) for n in names}
    save_services(InfraConfig(state_dir=state_dir).services_file, services)


def test_the_services_of_infra_up_are_found_as_the_cli_finds_them(state_dir: Path) -> None:
    _record(state_dir, "kafka", "redis")
    assert _endpoints(None, None) == (KAFKA, REDIS)
    assert _endpoints("given:1", None) == ("given:1", REDIS)


def test_the_settings_come_before_the_record(
    state_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _record(state_dir, "kafka", "redis")
    monkeypatch.setenv("CM_REDIS_URL", "redis://configured:6379/0")
    assert _endpoints(None, None) == (KAFKA, "redis://configured:6379/0")


def test_no_kafka_anywhere_is_one_line_naming_the_setting(state_dir: Path) -> None:
    _record(state_dir, "redis")
    latency = SourceCollection("query_latency", (field("query", "string"),))
    with pytest.raises(InfrastructureError) as failed:
        EmbeddedReplica("replica-7", [latency])
    assert str(failed.value) == (
        "EmbeddedReplica: no kafka to use: start one with `collection-manager infra up` "
        f"(state dir {state_dir}) or set CM_KAFKA_BOOTSTRAP (or pass bootstrap= and redis_url=)"
    )
