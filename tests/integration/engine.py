"""The project's Docker engine for the tests, with its images built, or a skip saying why.

The engine is ``docker/engine.sh``'s (Debian's dockerd under the state directory, no
bridge, a debootstrap base image), set up where this machine has none; the images are
``docker/build.sh``'s. An engine this session started is stopped again at its end, and
nothing of it stays mounted.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
ENGINE_SCRIPT = REPO / "docker" / "engine.sh"
BUILD_SCRIPT = REPO / "docker" / "build.sh"


@dataclasses.dataclass(frozen=True)
class Engine:
    """A running engine: the environment that reaches it, and whether this session started it.

    Attributes:
        env: this process's environment with ``DOCKER_HOST`` and ``CM_STATE_DIR`` set.
        started: stop it again at the end of the session.
        exec_root: dockerd's exec root, checked to be unmounted after it stops.
    """

    env: dict[str, str]
    started: bool
    exec_root: Path

    @property
    def docker_host(self) -> str:
        return self.env["DOCKER_HOST"]


def run(args: list[str], env: dict[str, str], timeout: float = 600) -> str:
    """Runs a command of the container tooling; its output, or a failure showing its tail."""
    done = subprocess.run(
        args, env=env, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)}:\n{done.stdout[-2000:]}{done.stderr[-2000:]}"
    return done.stdout


def prepare(state_dir: Path) -> Engine:
    """Installs and starts the engine where needed and builds the images (cold about 3 min).

    Skips the calling test where the project's engine cannot run: it needs root and apt.
    """
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip("the project's Docker engine needs root and apt-get (docs/operations.md)")
    docker_dir = state_dir / "docker"
    env = dict(os.environ, CM_STATE_DIR=str(state_dir))
    env["DOCKER_HOST"] = f"unix://{docker_dir / 'docker.sock'}"
    was_running = "not running" not in run([str(ENGINE_SCRIPT), "status"], env)
    engine = Engine(env, started=not was_running, exec_root=docker_dir / "exec")
    try:
        for step in ("install", "up", "base"):
            run([str(ENGINE_SCRIPT), step], env)
        run([str(BUILD_SCRIPT)], env, timeout=1200)
    except BaseException:
        release(engine)
        raise
    return engine


def release(engine: Engine) -> None:
    """Stops the engine if this session started it; checks nothing of it stays mounted."""
    if not engine.started:
        return
    run([str(ENGINE_SCRIPT), "down"], engine.env)
    assert str(engine.exec_root) not in Path("/proc/self/mounts").read_text()
