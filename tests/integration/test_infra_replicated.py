"""The replicated deployment in one command, as a user's shell: ``infra up --replicated``
(three KRaft brokers, a Redis Cluster of three primaries with two replicas each), its
settings evaluated as printed, the pipeline on it (``consume``, one agent, a ``query``
that returns the agent's rows), the demo on it, then ``infra down``, after which none of
its processes runs.

It starts twelve service processes, a Spark consumer and then the demo's processes on two
cores: about two minutes here, so it is marked ``slow`` (``make test-slow``).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from collection_manager.config.services import pid_alive
from tests.examples.pages import ROOT
from tests.integration.test_first_contact import CONSUME_READY, START_S, _nothing_alarming, _ready
from tests.integration.user_session import UserSession
from tests.support import assert_eventually

CM = ".venv/bin/collection-manager"
NODES = [f"kafka-{i}" for i in range(1, 4)] + [f"redis-{i}" for i in range(1, 10)]
# Settings of the user's shell that would name other services or ports.
NOT_INHERITED = (
    "CM_KAFKA_BOOTSTRAP",
    "CM_REDIS_URL",
    "CM_REDIS_REPLICA_ACKS",
    "CM_KAFKA_PORT",
    "CM_REDIS_PORT",
    "CM_TOPIC",
)

pytestmark = pytest.mark.slow


@pytest.fixture
def session(tmp_path: Path) -> Iterator[UserSession]:
    """A user's shell with an empty state directory of its own and no service configured."""
    env = {k: v for k, v in os.environ.items() if k not in NOT_INHERITED}
    env["PATH"] = f"{ROOT / '.venv' / 'bin'}{os.pathsep}{env['PATH']}"
    # Short, as a user's ~/.local/state: Spark's Unix socket paths must fit under it.
    state = Path(tempfile.mkdtemp(prefix="cm-repl-"))
    env["CM_STATE_DIR"] = str(state / "state")
    env["CM_CONSUMER_METRICS_ADDRESS"] = "127.0.0.1:0"
    user = UserSession(env, tmp_path / "logs")
    try:
        yield user
    finally:
        user.close()
        user.run(f"{CM} infra down")  # whatever the test left running
        shutil.rmtree(state, ignore_errors=True)


def _ok(session: UserSession, command: str, timeout: float = 300) -> str:
    done = session.run(command, timeout)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _exports(printed: str) -> dict[str, str]:
    """The ``export NAME=value`` lines ``infra up --replicated`` printed."""
    return dict(re.findall(r"^export (CM_\w+)=(\S+)$", printed, re.MULTILINE))


def _nodes(session: UserSession) -> dict[str, dict[str, object]]:
    rows = json.loads(_ok(session, f"{CM} infra status --format json"))
    return {row["name"]: row for row in rows if row["name"] in NODES}


def _rows_of_r1(session: UserSession) -> list[object]:
    out = _ok(
        session, f"{CM} collections query compute_frontiers --where replica_id=r1 --format json"
    )
    rows = json.loads(out)["rows"]
    assert rows, out
    return list(rows)


def test_infra_up_replicated_runs_the_pipeline_and_down_leaves_nothing(
    session: UserSession,
) -> None:
    printed = _ok(session, f"{CM} infra up --replicated")
    assert f"# started: {', '.join(NODES)}" in printed, printed
    settings = _exports(printed)
    assert settings["CM_REDIS_REPLICA_ACKS"] == "1"
    assert len(settings["CM_KAFKA_BOOTSTRAP"].split(",")) == 3
    assert settings["CM_REDIS_URL"].count(",") == 8
    # Idempotent, and fine with its own settings exported: nothing started again.
    session.env.update(settings)
    again = _ok(session, f"{CM} infra up --replicated")
    assert "# started" not in again and _exports(again) == settings
    nodes = _nodes(session)
    assert sorted(nodes) == sorted(NODES)
    assert all(row["source"] == "replicated" and row["answers"] for row in nodes.values())

    consume = session.start("consume", f"{CM} consumer run")
    agent = session.start("r1", f"{CM} replicas run --id r1")
    _ready(agent, re.compile(r"^replica r1 running at epoch \d+", re.MULTILINE))
    _ready(consume, CONSUME_READY)
    assert_eventually(lambda: _rows_of_r1(session), timeout=START_S, interval=1.0)
    _replicated_topic(settings["CM_KAFKA_BOOTSTRAP"], "cm.requests")
    assert session.stop(agent) == 0, agent.output()
    assert session.stop(consume) == 0, consume.output()

    # The demo on it, through the same settings, on a topic of its own.
    demo = _ok(session, f"CM_TOPIC=cm.demo {CM} demo --duration 10", timeout=600)
    assert "verified: Redis holds exactly what the surviving agents hold" in demo, demo

    pids = [int(str(row["pid"])) for row in nodes.values()]
    stopped = _ok(session, f"{CM} infra down")
    assert all(f"{name} (pid" in stopped for name in NODES), stopped
    assert [pid for pid in pids if pid_alive(pid)] == []
    assert _nodes(session) == {}
    _nothing_alarming(session)


def _replicated_topic(bootstrap: str, topic: str) -> None:
    """The topic the agent created has the brokers' replication: three replicas each."""
    # Quiet: alive until collected, it would log every failed reconnect after `down`.
    admin = AdminClient({"bootstrap.servers": bootstrap, "log_level": 0})
    partitions = admin.list_topics(topic, timeout=10).topics[topic].partitions
    assert partitions and all(len(p.replicas) == 3 for p in partitions.values()), partitions
