"""A Docker engine for the tests, with the project's images built, or a skip saying why.

The user's own engine when one answers (``DOCKER_HOST``, or ``/var/run/docker.sock``);
else ``docker/engine.sh``'s (Debian's dockerd under the state directory, no bridge, a
debootstrap base image), set up here. The images are ``docker/build.sh``'s. An engine this
run started is stopped again at its end, and nothing of it stays mounted.
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
DEFAULT_SOCKET = "/var/run/docker.sock"
# CM_TEST_CONTAINERS=off skips every test that needs a Docker engine.
SKIP_SETTING = "CM_TEST_CONTAINERS"


@dataclasses.dataclass(frozen=True)
class Engine:
    """A running engine: the environment that reaches it, and whether this session started it.

    Attributes:
        env: this process's environment with ``DOCKER_HOST`` and ``CM_STATE_DIR`` set.
        started: stop it again at the end of the session.
        exec_root: dockerd's exec root, checked to be unmounted after it stops ("" for an
            engine that is not the project's own).
    """

    env: dict[str, str]
    started: bool
    exec_root: str = ""

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


def _answers(env: dict[str, str]) -> bool:
    try:
        done = subprocess.run(["docker", "version"], env=env, capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


def existing_docker_host() -> str | None:
    """The engine the user already has: ``DOCKER_HOST`` (which must answer), else a
    ``/var/run/docker.sock`` that answers; None when there is neither."""
    configured = os.environ.get("DOCKER_HOST")
    if configured:
        assert _answers(dict(os.environ)), f"DOCKER_HOST={configured} does not answer"
        return configured
    if Path(DEFAULT_SOCKET).is_socket() and _answers(
        dict(os.environ, DOCKER_HOST=f"unix://{DEFAULT_SOCKET}")
    ):
        return f"unix://{DEFAULT_SOCKET}"
    return None


def prepare(state_dir: Path) -> Engine:
    """An engine with the project's images built (cold about 3 min): the user's own when
    there is one (``existing_docker_host``), else the project's, installed and started here.

    Skips the calling test when ``CM_TEST_CONTAINERS=off``, or where no engine answers and
    the project's cannot run (it needs root and apt-get).
    """
    if os.environ.get(SKIP_SETTING, "on") == "off":
        pytest.skip(f"{SKIP_SETTING}=off: the container tests are skipped")
    env = dict(os.environ, CM_STATE_DIR=str(state_dir))
    host = existing_docker_host()
    if host is not None:
        env["DOCKER_HOST"] = host
        run([str(BUILD_SCRIPT)], env, timeout=1200)
        return Engine(env, started=False)
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        pytest.skip(
            "no Docker engine answers (DOCKER_HOST, /var/run/docker.sock) and the project's "
            "own needs root and apt-get (tests/README.md)"
        )
    docker_dir = state_dir / "docker"
    env["DOCKER_HOST"] = f"unix://{docker_dir / 'docker.sock'}"
    was_running = "not running" not in run([str(ENGINE_SCRIPT), "status"], env)
    engine = Engine(env, started=not was_running, exec_root=str(docker_dir / "exec"))
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
    assert engine.exec_root not in Path("/proc/self/mounts").read_text()
