"""Every reading command with Kafka down and with Redis down: an answer or one error line.

Never a traceback, never the password of a URL, whatever the command prints.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_specs
from tests.integration.consumer_process import run_cli

SECRET = "s3cret-Pa55"
# Port 1 on loopback: nothing listens, so a client is refused at once.
NOWHERE = "127.0.0.1:1"
READS = [
    ["collections", "query", "error_counts"],
    ["collections", "query", "error_counts", "--format", "json"],
    ["collections", "tail", "error_counts", "--since", "0"],
    ["collections", "list"],
    ["collections", "show", "error_counts"],
    ["replicas", "list"],
    ["status"],
    ["status", "--format", "json"],
]


@pytest.fixture(scope="module")
def collections(endpoints: Any) -> None:
    store = RedisStore.connect(endpoints.redis_url)
    existing = set(store.collections())
    for spec in introspection_specs():
        if spec.name not in existing:
            store.create_collection(spec)


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_reads_answer_with_kafka_down(argv: list[str], endpoints: Any, collections: None) -> None:
    done = run_cli(argv, CM_KAFKA_BOOTSTRAP=NOWHERE, CM_REDIS_URL=endpoints.redis_url)
    assert done.returncode == 0, done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "FAIL" not in done.stderr  # librdkafka's lines go through logging, not raw
    if argv == ["status", "--format", "json"]:
        consumer = json.loads(done.stdout)["consumer"]
        assert consumer["kafka"] in ("unreachable", "reachable")  # reachable: nothing to ask


@pytest.mark.parametrize("argv", READS, ids=" ".join)
def test_reads_say_one_line_with_redis_down(argv: list[str], endpoints: Any) -> None:
    url = f"redis://:{SECRET}@{NOWHERE}/0"
    done = run_cli(argv, CM_KAFKA_BOOTSTRAP=endpoints.kafka_bootstrap, CM_REDIS_URL=url)
    assert done.returncode == 1
    assert done.stdout == ""
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: ")
    assert "Traceback" not in done.stderr
    assert SECRET not in done.stderr


def test_verbose_adds_causes_but_no_secret(endpoints: Any) -> None:
    url = f"redis://user:{SECRET}@{NOWHERE}/0"
    done = run_cli(["-v", "collections", "query", "error_counts"], CM_REDIS_URL=url)
    assert done.returncode == 1
    assert "caused by" in done.stderr
    assert SECRET not in done.stderr
    assert "user:***@" in done.stderr
