"""The compose pipeline on a real Docker engine: up, rows of every replica, Prometheus
scraping every process, a removal, down.

The engine and images are the session's (``tests/integration/engine.py``). The pipeline
runs on free loopback ports under a project name of its own, so it meets nothing else.
"""

from __future__ import annotations

import json
import urllib.parse
import urllib.request
from collections import Counter
from typing import Any

import pytest

from collection_manager.devservices.processes import free_port
from tests.integration.engine import Engine, run
from tests.support import assert_eventually


@pytest.fixture
def engine(docker_engine: Engine) -> dict[str, str]:
    return docker_engine.env


def _rows_by_replica(compose: list[str], env: dict[str, str]) -> Counter[str]:
    out = run(
        [*compose, "run", "--rm", "cli", "query", "hydration_status", "--format", "json"], env
    )
    return Counter(entry["row"]["replica_id"] for entry in json.loads(out)["rows"])


_PORTS = (
    "KAFKA_PORT",
    "KAFKA_CONTROLLER_PORT",
    "REDIS_PORT",
    "CONSUMER_METRICS_PORT",
    "CONTROLLER_METRICS_PORT",
    "R1_METRICS_PORT",
    "R2_METRICS_PORT",
    "R3_METRICS_PORT",
    "PROMETHEUS_PORT",
)


def _scraped(prometheus: str) -> None:
    """The stack's Prometheus scrapes every process, and the consumer applied requests."""
    up = _query(prometheus, "up")
    assert {(r["metric"]["job"], r["value"][1]) for r in up} == {
        ("cm-consumer", "1"),
        ("cm-controller", "1"),
        ("cm-agent", "1"),
    }, up
    assert len(up) == 5, up
    applied = _query(prometheus, "sum(cm_consumer_requests_applied_total)")
    assert applied and float(applied[0]["value"][1]) > 0, applied


def _query(prometheus: str, expression: str) -> list[dict[str, Any]]:
    url = f"{prometheus}/api/v1/query?" + urllib.parse.urlencode({"query": expression})
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return list(json.load(reply)["data"]["result"])
    except OSError as exc:
        raise AssertionError(f"Prometheus does not answer: {exc}") from exc


def test_compose_runs_the_pipeline_and_a_removed_replica_loses_its_rows(
    engine: dict[str, str], unique: str
) -> None:
    env = dict(engine)
    for name in _PORTS:
        env[f"CM_COMPOSE_{name}"] = str(free_port())
    project = "cm" + "".join(c for c in unique.lower() if c.isalnum())[-20:]
    compose = ["docker-compose", "-p", project]
    try:
        run([*compose, "up", "-d"], env)

        def all_three() -> None:
            rows = _rows_by_replica(compose, env)
            assert set(rows) == {"r1", "r2", "r3"} and min(rows.values()) > 0, rows

        assert_eventually(all_three, timeout=240, interval=2)
        prometheus = f"http://127.0.0.1:{env['CM_COMPOSE_PROMETHEUS_PORT']}"
        assert_eventually(lambda: _scraped(prometheus), timeout=120, interval=2)
        run([*compose, "stop", "r2"], env)  # SIGTERM: the agent removes its replica

        def r2_gone() -> None:
            rows = _rows_by_replica(compose, env)
            assert set(rows) == {"r1", "r3"}, rows

        assert_eventually(r2_gone, timeout=120, interval=2)
    finally:
        run([*compose, "down", "-v"], env)
    label = f"label=com.docker.compose.project={project}"
    assert run(["docker", "ps", "-aq", "--filter", label], env).strip() == ""
    networks = run(["docker", "network", "ls", "--format", "{{.Driver}}"], env).split()
    assert "bridge" not in networks
