"""The compose pipeline on a real Docker engine: up, rows of every replica, a removal, down.

The engine is the project's own (``docker/engine.sh``: Debian's dockerd under the state
directory, no bridge, a debootstrap base image), set up when this machine has none and
stopped again if this test started it; the images are ``docker/build.sh``'s. The pipeline
runs on free loopback ports under a project name of its own, so it meets nothing else.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest

from collection_manager.config import InfraConfig
from collection_manager.devservices.processes import free_port
from tests.support import assert_eventually

REPO = Path(__file__).resolve().parents[2]
ENGINE = REPO / "docker" / "engine.sh"


def _run(args: list[str], env: dict[str, str], timeout: float = 600) -> str:
    done = subprocess.run(
        args, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


@pytest.fixture(scope="module")
def engine(infra_config: InfraConfig) -> Iterator[dict[str, str]]:
    """The environment of a running engine with the project's images built."""
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("the project's engine needs root and apt-get (Debian); see docs/operations.md")
    env = dict(os.environ, CM_STATE_DIR=str(infra_config.state_dir))
    env["DOCKER_HOST"] = f"unix://{infra_config.state_dir / 'docker' / 'docker.sock'}"
    was_running = "not running" not in _run([str(ENGINE), "status"], env)
    for step in ("install", "up", "base"):
        _run([str(ENGINE), step], env)
    try:
        _run([str(REPO / "docker" / "build.sh")], env, timeout=1200)
        yield env
    finally:
        if not was_running:
            _run([str(ENGINE), "down"], env)
            exec_root = str(infra_config.state_dir / "docker" / "exec")
            assert exec_root not in Path("/proc/self/mounts").read_text()  # nothing left


def _rows_by_replica(compose: list[str], env: dict[str, str]) -> Counter[str]:
    out = _run(
        [*compose, "run", "--rm", "cli", "query", "hydration_status", "--format", "json"], env
    )
    return Counter(entry["row"]["replica_id"] for entry in json.loads(out)["rows"])


def test_compose_runs_the_pipeline_and_a_removed_replica_loses_its_rows(
    engine: dict[str, str], unique: str
) -> None:
    env = dict(engine)
    for name in ("KAFKA_PORT", "KAFKA_CONTROLLER_PORT", "REDIS_PORT"):
        env[f"CM_COMPOSE_{name}"] = str(free_port())
    project = "cm" + "".join(c for c in unique.lower() if c.isalnum())[-20:]
    compose = ["docker-compose", "-p", project]
    try:
        _run([*compose, "up", "-d"], env)

        def all_three() -> None:
            rows = _rows_by_replica(compose, env)
            assert set(rows) == {"r1", "r2", "r3"} and min(rows.values()) > 0, rows

        assert_eventually(all_three, timeout=240, interval=2)
        _run([*compose, "stop", "r2"], env)  # SIGTERM: the agent removes its replica

        def r2_gone() -> None:
            rows = _rows_by_replica(compose, env)
            assert set(rows) == {"r1", "r3"}, rows

        assert_eventually(r2_gone, timeout=120, interval=2)
    finally:
        _run([*compose, "down", "-v"], env)
    label = f"label=com.docker.compose.project={project}"
    assert _run(["docker", "ps", "-aq", "--filter", label], env).strip() == ""
    networks = _run(["docker", "network", "ls", "--format", "{{.Driver}}"], env).split()
    assert "bridge" not in networks
