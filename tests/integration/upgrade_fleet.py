"""The processes of a rolling-upgrade test: each a CLI of some release, started and stopped
by pid, and readers of two releases that keep querying meanwhile.

Every child runs in its own process group (a consumer's Spark JVM and Python workers go
with it) and in the test's folder, so nothing of this checkout's tree is on its path: a
release's CLI imports only what its own venv holds.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import signal
import subprocess
import threading
from pathlib import Path

import redis as redis_lib

from collection_manager.storage.heartbeats import alive_key, beat_key
from tests.support import assert_eventually

STOP_WAIT_S = 60


@dataclasses.dataclass
class Child:
    """One running CLI process."""

    name: str
    release: str
    process: subprocess.Popen[bytes]
    log: Path

    def tail(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


class UpgradeFleet:
    """The children of one test, by name (``consumer``, ``controller``, ``r1``, ...)."""

    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.children: dict[str, Child] = {}
        self.exits: list[str] = []  # children that ended while they should have run

    def start(self, name: str, release: str, bin_dir: Path, argv: list[str]) -> Child:
        log = self.folder / f"{name}-{release}.log"
        with open(log, "ab") as out:
            process = subprocess.Popen(
                [str(bin_dir / "collection-manager"), *argv],
                env=self.env,
                cwd=self.folder,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.children[name] = Child(name, release, process, log)
        return self.children[name]

    def check_running(self) -> None:
        """Records each child that ended by itself (a process exit the test must not see)."""
        for child in self.children.values():
            if child.process.poll() is not None:
                self.exits.append(f"{child.name} ({child.release}): {child.tail()}")

    def stop(self, name: str) -> int:
        """SIGTERM to its pid (``kill PID``), as an operator stops it for its upgrade; its
        exit code. (The consumer stops its Spark JVM itself: a SIGTERM to the whole group
        would kill the JVM under it.)"""
        self.check_running()
        child = self.children.pop(name)
        os.kill(child.process.pid, signal.SIGTERM)
        try:
            return child.process.wait(STOP_WAIT_S)
        except subprocess.TimeoutExpired:
            os.killpg(child.process.pid, signal.SIGKILL)
            child.process.wait(30)
            raise AssertionError(
                f"{name} ({child.release}) ignored SIGTERM: {child.tail()}"
            ) from None

    def stop_all(self) -> None:
        for child in self.children.values():
            with contextlib.suppress(ProcessLookupError):
                os.killpg(child.process.pid, signal.SIGKILL)
            child.process.wait(30)
        self.children.clear()


def wait_for_consumer(redis: redis_lib.Redis, topic: str, child: Child) -> None:
    """Until ``child`` (a ``consume``) beats: it runs its query."""

    def beats() -> None:
        assert child.process.poll() is None, child.tail()
        assert redis.exists(alive_key("consumer", topic))
        record = json.loads(redis.get(beat_key("consumer", topic)) or "{}")
        assert record.get("pid") == child.process.pid

    assert_eventually(beats, timeout=120)


class Reader(threading.Thread):
    """Runs one release's ``query`` again and again until stopped; keeps every failure."""

    def __init__(
        self, release: str, bin_dir: Path, argv: list[str], env: dict[str, str], cwd: Path
    ) -> None:
        super().__init__(name=f"reader-{release}", daemon=True)
        self.release, self.env, self.cwd = release, env, cwd
        self.command = [str(bin_dir / "collection-manager"), *argv]
        self.reads = 0
        self.failures: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        while not self._halt.wait(0.5):
            done = subprocess.run(
                self.command,
                env=self.env,
                cwd=self.cwd,
                capture_output=True,
                text=True,
                timeout=120,
            )
            self.reads += 1
            if done.returncode != 0 or "Traceback" in done.stderr:
                self.failures.append(f"exit {done.returncode}: {done.stderr[-2000:]}")

    def stop(self) -> None:
        self._halt.set()
        self.join(150)
