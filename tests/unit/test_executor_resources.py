"""A Python worker's connections (``executor_resources``): each made once per key and reused
by the worker's later tasks, one store at a time, all forgotten by ``reset``."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from spark_consumers import executor_resources
from spark_consumers.applier import ExecutorSettings
from spark_consumers.executor_resources import ExecutorResources

SETTINGS = ExecutorSettings(
    kafka_bootstrap="kafka:9092",
    redis_url="redis://one:6379",
    dead_letter_topic="dead",
    max_request_bytes=1000,
    log_max_length=10,
    dead_letter_max_bytes=2000,
    replica_namespace="cm:replicas",
)


class Made:
    """A stand-in for a connection: what it was made with."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.args, self.kwargs = args, kwargs


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[Made]:
    """Every stand-in made, in order, in place of the module's real connections."""
    every: list[Made] = []

    def factory(*args: Any, **kwargs: Any) -> Made:
        every.append(Made(*args, **kwargs))
        return every[-1]

    for name in (
        "connected_client",
        "guarded_client",
        "redis_client",
        "StoreWriter",
        "ReplicaRecord",
        "IssuedEpochs",
        "DeadLetterLedger",
        "dead_letter_producer",
    ):
        monkeypatch.setattr(executor_resources, name, factory)
    return every


def test_each_is_made_once_and_reused_by_later_tasks(made: list[Made]) -> None:
    resources = ExecutorResources()
    first = [
        resources.store(SETTINGS),
        resources.replica_record(SETTINGS),
        resources.issued_epochs(SETTINGS),
        resources.ledger(SETTINGS),
        resources.dead_letter_producer(SETTINGS),
    ]
    count = len(made)
    again = [
        resources.store(SETTINGS),
        resources.replica_record(SETTINGS),
        resources.issued_epochs(SETTINGS),
        resources.ledger(SETTINGS),
        resources.dead_letter_producer(SETTINGS),
    ]
    assert all(a is b for a, b in zip(first, again, strict=True))
    assert len(made) == count


def test_the_records_of_one_redis_share_one_client(made: list[Made]) -> None:
    resources = ExecutorResources()
    record: Any = resources.replica_record(SETTINGS)
    issued: Any = resources.issued_epochs(SETTINGS)
    ledger: Any = resources.ledger(SETTINGS)
    assert record.args[0] is issued.args[0] is ledger.args[0]
    assert record.args[0].args == ("redis://one:6379",)


def test_a_store_of_new_settings_replaces_the_one_before(made: list[Made]) -> None:
    resources = ExecutorResources()
    old: Any = resources.store(SETTINGS)
    restarted = dataclasses.replace(SETTINGS, redis_run_id="abc")
    new: Any = resources.store(restarted)
    # The run-checking client, as these settings name a Redis process.
    assert new.args[0].args == ("redis://one:6379", "abc")
    assert new is not old and resources.store(restarted) is new
    assert resources.store(SETTINGS) is not old  # forgotten: made again


def test_reset_forgets_everything_as_a_new_worker_process_starts(made: list[Made]) -> None:
    resources = ExecutorResources()
    store = resources.store(SETTINGS)
    producer = resources.dead_letter_producer(SETTINGS)
    record: Any = resources.replica_record(SETTINGS)
    resources.reset()
    assert resources.store(SETTINGS) is not store
    assert resources.dead_letter_producer(SETTINGS) is not producer
    fresh: Any = resources.replica_record(SETTINGS)
    assert fresh is not record
    assert fresh.args[0] is not record.args[0]  # a new client


def test_the_applier_uses_the_process_s_one_instance() -> None:
    from spark_consumers import applier

    assert applier.RESOURCES is executor_resources.RESOURCES
