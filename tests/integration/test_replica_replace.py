"""A second ``replicas run`` of a live replica id: refused, unless ``--replace`` fences the
first (``Controller.check_replaceable``)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from collection_manager.config import ReplicaConfig
from collection_manager.control.errors import ReplicaRunningError
from collection_manager.control.members import MemberRecord
from producers.embedded import EmbeddedReplica
from producers.sources.plugin import SourceCollection, field
from tests.support import assert_eventually


@pytest.fixture
def env(kafka: str, endpoints: object, topic: str, unique: str, tmp_path: Path) -> dict[str, str]:
    return {
        "CM_KAFKA_BOOTSTRAP": kafka,
        "CM_REDIS_URL": endpoints.redis_url,  # type: ignore[attr-defined]
        "CM_TOPIC": topic,
        "CM_STATE_DIR": str(tmp_path / "state"),
        "CM_COLLECTION_SUFFIX": f"-{unique}",
        "CM_REPLICA_NAMESPACE": f"cm:replicas:{unique}",
        "CM_HEARTBEAT_INTERVAL_MS": "300",
        "CM_STEP_INTERVAL_MS": "200",
    }


@pytest.fixture
def agents() -> Iterator[list[subprocess.Popen[bytes]]]:
    started: list[subprocess.Popen[bytes]] = []
    yield started
    for process in started:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)


def start_agent(env: dict[str, str], log: Path, *options: str) -> subprocess.Popen[bytes]:
    argv = ["replicas", "run", "--id", "r1", "--workers", "2", "--dataflows", "2", *options]
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "collection_manager.cli.main", *argv],
            env={**os.environ, **env},
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def test_a_second_agent_of_a_live_replica_refuses_unless_it_replaces_the_first(
    env: dict[str, str],
    agents: list[subprocess.Popen[bytes]],
    redis: object,
    tmp_path: Path,
) -> None:
    first_log, third_log = tmp_path / "first.log", tmp_path / "third.log"
    first = start_agent(env, first_log)
    agents.append(first)

    def running(process: subprocess.Popen[bytes], log: Path, epoch: int) -> None:
        assert process.poll() is None, log.read_text()[-3000:]
        assert f"replica r1 running at epoch {epoch}" in log.read_text()

    assert_eventually(lambda: running(first, first_log, 1), timeout=60)

    second = subprocess.run(
        [sys.executable, "-m", "collection_manager.cli.main", "replicas", "run", "--id", "r1"],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert second.returncode == 1, second.stdout + second.stderr
    assert second.stdout == ""
    lines = second.stderr.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("error: replica r1 already runs at epoch 1 ("), lines
    assert lines[0].endswith(
        "stop its agent first, or pass --replace to fence epoch 1 and run this one instead"
    ), lines
    assert "lease until " in lines[0]
    members = MemberRecord(redis, env["CM_REPLICA_NAMESPACE"])  # type: ignore[arg-type]
    member = members.get("r1")
    assert member is not None and (member.epoch, member.state) == (1, "active")
    assert first.poll() is None, first_log.read_text()[-3000:]

    third = start_agent(env, third_log, "--replace")
    agents.append(third)
    assert_eventually(lambda: running(third, third_log, 2), timeout=60)
    assert third_log.read_text().startswith(
        "replica r1: replacing the running epoch 1; it is fenced and its rows retracted\n"
    )
    assert first.wait(60) == 1, first_log.read_text()[-3000:]
    assert "epoch 1 is no longer a member" in first_log.read_text()
    embedded = EmbeddedReplica(
        "r1",
        [SourceCollection("claims_probe", (field("k", "string"),))],
        env["CM_KAFKA_BOOTSTRAP"],
        env["CM_REDIS_URL"],
        env["CM_TOPIC"],
        ReplicaConfig(
            replica_namespace=env["CM_REPLICA_NAMESPACE"],
            collection_suffix=env["CM_COLLECTION_SUFFIX"],
        ),
    )
    with pytest.raises(ReplicaRunningError, match=r"already runs at epoch 2 .* pass replace=True"):
        embedded.start()
    third.send_signal(signal.SIGTERM)
    assert third.wait(60) == 0, third_log.read_text()[-3000:]
    for log in (first_log, third_log):
        assert "Traceback" not in log.read_text()
