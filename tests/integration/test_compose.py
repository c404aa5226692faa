"""The compose pipeline on a real Docker engine: up, rows of every replica, Prometheus
scraping every process, a removal, down; and the same on the ``replicated`` profile.

The engine and images are the session's (``tests/integration/engine.py``). The pipeline
runs on free loopback ports under a project name of its own, so it meets nothing else.
"""

from __future__ import annotations

import json
import random
import urllib.parse
import urllib.request
from collections import Counter
from typing import Any

import pytest
import redis
from confluent_kafka.admin import AdminClient

from collection_manager.devservices.processes import free_port, port_is_free
from tests.integration.engine import Engine, run
from tests.support import assert_eventually


@pytest.fixture
def engine(docker_engine: Engine) -> dict[str, str]:
    return docker_engine.env


def _rows_by_replica(compose: list[str], env: dict[str, str], cli: str = "cli") -> Counter[str]:
    out = run(
        [
            *compose,
            "run",
            "--rm",
            cli,
            "collections",
            "query",
            "hydration_status",
            "--format",
            "json",
        ],
        env,
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
    "SERVER_PORT",
)


def _console(server: str) -> None:
    """The server service answers the console's page and, through its API, the fleet."""
    with urllib.request.urlopen(f"{server}/", timeout=5) as reply:
        assert "console.js" in reply.read().decode()
    with urllib.request.urlopen(f"{server}/api/v1/replicas", timeout=5) as reply:
        shown = {replica["replica_id"] for replica in json.load(reply)["replicas"]}
    assert shown == {"r1", "r2", "r3"}, shown


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


# Each step waits on a condition; on a loaded machine the whole took more than the default
# 600 s (every `compose run` of the query starts a container).
@pytest.mark.timeout(1500)
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
        server = f"http://127.0.0.1:{env['CM_COMPOSE_SERVER_PORT']}"
        assert_eventually(lambda: _console(server), timeout=120, interval=2)
        run([*compose, "stop", "r2"], env)  # SIGTERM: the agent removes its replica

        def r2_gone() -> None:
            rows = _rows_by_replica(compose, env)
            assert set(rows) == {"r1", "r3"}, rows

        assert_eventually(r2_gone, timeout=300, interval=2)
    finally:
        run([*compose, "down", "-v"], env)
    label = f"label=com.docker.compose.project={project}"
    assert run(["docker", "ps", "-aq", "--filter", label], env).strip() == ""
    networks = run(["docker", "network", "ls", "--format", "{{.Driver}}"], env).split()
    assert "bridge" not in networks


_REPLICATED_PORTS = (
    *(f"KAFKA_{i}_PORT" for i in (1, 2, 3)),
    *(f"KAFKA_{i}_CONTROLLER_PORT" for i in (1, 2, 3)),
    "CONSUMER_METRICS_PORT",
    "CONTROLLER_METRICS_PORT",
    *(f"R{i}_METRICS_PORT" for i in (1, 2, 3)),
)
_REDIS_NODES = range(1, 10)


def _redis_node_port(taken: set[int]) -> int:
    """A free port whose cluster bus port (+ 10000, Redis's default) is free and valid."""
    while True:
        port = random.randrange(20000, 55000)
        pair = (port, port + 10000)
        if taken.isdisjoint(pair) and all(map(port_is_free, pair)):
            taken.update(pair)
            return port


def _services_running(project: str, env: dict[str, str]) -> set[str]:
    label = f"label=com.docker.compose.project={project}"
    form = '{{.Label "com.docker.compose.service"}}'
    return set(run(["docker", "ps", "--filter", label, "--format", form], env).split())


def _replicated_services(bootstrap: str, redis_port: int) -> None:
    """The brokers replicate the topic three ways; the cluster has three primaries with two
    replicas each, with the settings the product relies on."""
    # Quiet: alive until collected, it would log every failed reconnect after `down`.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    partitions = admin.list_topics("cm.requests", timeout=10).topics["cm.requests"].partitions
    assert partitions and all(len(p.replicas) == 3 for p in partitions.values()), partitions
    with redis.Redis(port=redis_port, decode_responses=True) as node:
        nodes = node.cluster("NODES").values()  # as redis-py parses CLUSTER NODES
        config = node.config_get("*")
    primaries = [n["node_id"] for n in nodes if "master" in n["flags"]]
    replicas_of = Counter(n["master_id"] for n in nodes if "slave" in n["flags"])
    assert len(primaries) == 3 and all(replicas_of[p] == 2 for p in primaries), nodes
    assert config["appendfsync"] == "always" and config["appendonly"] == "yes"
    assert config["cluster-allow-replica-migration"] == "no"
    assert config["cluster-replica-validity-factor"] == "0"


@pytest.mark.slow
def test_the_replicated_profile_runs_the_pipeline_on_three_brokers_and_a_redis_cluster(
    engine: dict[str, str], unique: str
) -> None:
    """Naming the profile's agents starts them with what they need, and nothing of the
    single-node pipeline; their rows arrive through three brokers and a Redis Cluster of
    nine nodes; a stopped agent's rows go. Marked slow (make test-slow): twelve service
    containers beside the pipeline's JVMs on two cores took 100 s here on a quiet machine and
    5.6 minutes beside other test runs; the single-node test above stays in make test."""
    env = dict(engine)
    taken: set[int] = set()
    for name in _REPLICATED_PORTS:
        env[f"CM_COMPOSE_REPLICATED_{name}"] = str(free_port())
        taken.add(int(env[f"CM_COMPOSE_REPLICATED_{name}"]))
    for index in _REDIS_NODES:
        env[f"CM_COMPOSE_REPLICATED_REDIS_{index}_PORT"] = str(_redis_node_port(taken))
    project = "cmr" + "".join(c for c in unique.lower() if c.isalnum())[-20:]
    compose = ["docker-compose", "-p", project, "--profile", "replicated"]
    agents = ["replicated-r1", "replicated-r2", "replicated-r3"]
    try:
        run([*compose, "up", "-d", *agents], env)
        assert {"kafka", "redis", "consumer", "r1", "prometheus"}.isdisjoint(
            _services_running(project, env)
        )

        def all_three() -> None:
            rows = _rows_by_replica(compose, env, "replicated-cli")
            assert set(rows) == {"r1", "r2", "r3"} and min(rows.values()) > 0, rows

        assert_eventually(all_three, timeout=300, interval=2)
        bootstrap = ",".join(
            f"127.0.0.1:{env[f'CM_COMPOSE_REPLICATED_KAFKA_{i}_PORT']}" for i in (1, 2, 3)
        )
        _replicated_services(bootstrap, int(env["CM_COMPOSE_REPLICATED_REDIS_1_PORT"]))
        run([*compose, "stop", "replicated-r2"], env)  # SIGTERM: the agent removes its replica

        def r2_gone() -> None:
            rows = _rows_by_replica(compose, env, "replicated-cli")
            assert set(rows) == {"r1", "r3"}, rows

        assert_eventually(r2_gone, timeout=300, interval=2)
    finally:
        run([*compose, "down", "-v"], env)
    label = f"label=com.docker.compose.project={project}"
    assert run(["docker", "ps", "-aq", "--filter", label], env).strip() == ""
    assert run(["docker", "volume", "ls", "-q", "--filter", label], env).strip() == ""
    networks = run(["docker", "network", "ls", "--format", "{{.Driver}}"], env).split()
    assert "bridge" not in networks
