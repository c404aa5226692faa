"""Ctrl-C at any point of ``infra up`` or ``infra down`` leaves no orphan service.

``infra up`` runs as a process with a state directory of this test's own and gets SIGINT
at several points of starting the broker and Redis. Afterwards every service process it
started (found by its working directory, which lies in that state directory) is either
gone or recorded in ``services.json``, where ``infra down`` finds it; and the next
``infra up`` starts or reuses services that answer.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from collection_manager.devservices.processes import pid_alive
from tests.support import assert_eventually


def _cli(state: Path, *args: str, **popen: object) -> subprocess.Popen[bytes]:
    env = dict(os.environ, CM_STATE_DIR=str(state))
    for variable in ("CM_KAFKA_BOOTSTRAP", "CM_REDIS_URL", "CM_KAFKA_PORT", "CM_REDIS_PORT"):
        env.pop(variable, None)
    return subprocess.Popen(
        [sys.executable, "-m", "collection_manager.cli.main", "infra", *args],
        env=env,
        cwd=state,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        **popen,  # type: ignore[arg-type]
    )


def _services_under(state: Path) -> set[int]:
    """Live processes whose working directory is in ``state`` (every service started there)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cwd = os.readlink(entry / "cwd")
        except OSError:
            continue
        pid = int(entry.name)
        home = Path(cwd)
        if any(home.is_relative_to(state / name) for name in ("kafka", "redis")) and pid_alive(pid):
            found.add(pid)
    return found


def _recorded(state: Path) -> set[int]:
    try:
        services = json.loads((state / "services.json").read_text())
    except (OSError, ValueError):
        return set()
    return {int(service["pid"]) for service in services.values()}


def _down(state: Path) -> None:
    down = _cli(state, "down")
    out, _ = down.communicate(timeout=120)
    assert down.returncode == 0, out.decode()
    assert_eventually(lambda: _nothing_under(state), timeout=30)


def _nothing_under(state: Path) -> None:
    assert _services_under(state) == set()


def _after(delay_s: float) -> Callable[[Path], None]:
    def wait(_state: Path) -> None:
        time.sleep(delay_s)

    return wait


def _when_spawned(service: str, running: str = "") -> Callable[[Path], None]:
    """Waits until ``service``'s process exists (one whose command line holds ``running``):
    the moment between its spawn and readiness."""

    def wait(state: Path) -> None:
        def runs(pid: int) -> bool:
            try:
                home = Path(os.readlink(f"/proc/{pid}/cwd"))
                command = Path(f"/proc/{pid}/cmdline").read_bytes()
            except OSError:  # it ended since it was listed
                return False
            return home.is_relative_to(state / service) and running.encode() in command

        def spawned() -> None:
            assert any(runs(pid) for pid in _services_under(state))

        assert_eventually(spawned, timeout=120, interval=0.02)

    return wait


def _when_written(name: str) -> Callable[[Path], None]:
    """Waits until ``up`` wrote file ``name`` of the state directory."""

    def wait(state: Path) -> None:
        def written() -> None:
            assert (state / name).exists()

        assert_eventually(written, timeout=120, interval=0.02)

    return wait


@pytest.mark.parametrize(
    "interrupt_when",
    [
        _when_written("kafka/server.properties"),  # about to spawn the storage formatter
        _when_spawned("kafka", "kafka.tools.StorageTool"),  # formatting the broker's storage
        _when_spawned("kafka", "kafka.Kafka"),  # between the broker's spawn and its first answer
        _after(6.0),
        _when_spawned("redis"),
    ],
    ids=["formatting-storage", "formatter-spawned", "broker-spawned", "after-6s", "redis-spawned"],
)
def test_ctrl_c_during_infra_up_leaves_no_orphan(
    interrupt_when: Callable[[Path], None], tmp_path: Path
) -> None:
    state = tmp_path / "state"
    state.mkdir()
    try:
        up = _cli(state, "up")
        interrupt_when(state)
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=120)
        # Interrupted (130), or it had finished (0); never a traceback.
        assert up.returncode in (0, 130), out.decode()
        assert b"Traceback" not in out, out.decode()
        orphans = _services_under(state) - _recorded(state)
        assert orphans == set(), f"running but not recorded: {orphans}\n{out.decode()}"
        # The next `up` starts what is missing (or reuses what runs) and both answer.
        again = _cli(state, "up")
        out, _ = again.communicate(timeout=180)
        assert again.returncode == 0, out.decode()
        assert _services_under(state) == _recorded(state) and len(_recorded(state)) == 2
    finally:
        _down(state)


def test_ctrl_c_during_infra_down_leaves_no_orphan(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir()
    try:
        up = _cli(state, "up")
        out, _ = up.communicate(timeout=180)
        assert up.returncode == 0, out.decode()
        down = _cli(state, "down")
        assert_eventually(lambda: _holds_the_lock(down.pid, state), timeout=60, interval=0.02)
        down.send_signal(signal.SIGINT)
        out, _ = down.communicate(timeout=120)
        assert down.returncode in (0, 130), out.decode()
        assert b"Traceback" not in out, out.decode()
        assert_eventually(lambda: _no_orphans(state), timeout=30)
    finally:
        _down(state)


def _holds_the_lock(pid: int, state: Path) -> None:
    """``pid`` holds the state directory's lock: it is stopping the services."""
    fds = Path(f"/proc/{pid}/fd")
    assert fds.exists(), f"process {pid} ended before it was seen holding the lock"
    links = []
    for fd in fds.iterdir():
        try:
            links.append(os.readlink(fd))
        except FileNotFoundError:  # closed between listing and reading it
            continue
    assert str(state / "lock") in links


def _no_orphans(state: Path) -> None:
    assert _services_under(state) <= _recorded(state)
