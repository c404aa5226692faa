"""The demo's child processes: the Spark consumer and one process per replica agent.

Each runs ``python -m collection_manager.cli.main ...`` in its own session (so a Ctrl-C in the
terminal reaches only the demo, which then stops them in order) with its output in a log
file. They are stopped by their pid; a SIGKILL goes to the child's whole process group, so
the consumer's Spark JVM dies with it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from collection_manager.devservices.processes import log_tail

CLI = (sys.executable, "-m", "collection_manager.cli.main", "--verbose")


class Child:
    """One started process.

    Args:
        name: what it is, for messages.
        args: the CLI's arguments after ``collection-manager``.
        env: its whole environment.
        log: where its output goes (appended).
    """

    def __init__(self, name: str, args: Sequence[str], env: Mapping[str, str], log: Path) -> None:
        self.name = name
        self.log = log
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "ab") as out:
            self._process = subprocess.Popen(
                [*CLI, *args],
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.pid = self._process.pid

    @property
    def running(self) -> bool:
        """Whether it has not exited."""
        return self._process.poll() is None

    @property
    def exit_code(self) -> int | None:
        """Its exit status (negative: the signal that ended it), None while it runs."""
        return self._process.poll()

    def describe(self) -> str:
        """``running``, ``exited 1``, ``SIGKILLed``, ..."""
        code = self.exit_code
        if code is None:
            return "running"
        if code < 0:
            return f"{signal.Signals(-code).name}ed"
        return f"exited {code}"

    def kill(self) -> None:
        """SIGKILLs its process group and reaps it."""
        if self.running:  # never signal a reaped pid: it may belong to someone else now
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.pid, signal.SIGKILL)
        self._process.wait()

    def terminate(self) -> None:
        """Asks it to stop (SIGTERM): agents say goodbye, the consumer ends its batch."""
        if self.running:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGTERM)

    def wait(self, timeout_s: float) -> bool:
        """Waits up to ``timeout_s`` for it to exit; returns whether it did."""
        try:
            self._process.wait(max(timeout_s, 0.0))
        except subprocess.TimeoutExpired:
            return False
        return True

    def log_tail(self, lines: int = 20) -> str:
        """The end of its log, for error messages."""
        return log_tail(self.log, lines)


class Children:
    """The processes of one demo run, their logs and state files in one directory.

    Args:
        work_dir: where logs and state files go; emptied first, so that no file of an
            earlier run can count.
        env: every child's environment.
    """

    def __init__(self, work_dir: Path, env: Mapping[str, str]) -> None:
        shutil.rmtree(work_dir, ignore_errors=True)
        work_dir.mkdir(parents=True)
        self.work_dir = work_dir
        self.started: list[Child] = []
        self._env = dict(env)

    def spawn(self, name: str, args: Sequence[str], env: Mapping[str, str] | None = None) -> Child:
        """Starts ``collection-manager <args>`` with its output in ``<name>.log``; ``env``
        adds to (or overrides) every child's environment."""
        child = Child(name, args, {**self._env, **(env or {})}, self.work_dir / f"{name}.log")
        self.started.append(child)
        return child

    def state_file(self, replica: str) -> Path:
        """Where the replica's agent writes what it holds once it settled."""
        return self.work_dir / f"{replica}.state.json"

    def stop(self, grace_s: float = 20.0) -> None:
        """SIGTERMs every child at once, then SIGKILLs those still running after ``grace_s``.

        At once, because each takes a while: agents say goodbye (a fenced removal of
        their own replica), the consumer finishes its request group.
        """
        for child in self.started:
            child.terminate()
        deadline = time.monotonic() + grace_s
        try:
            for child in self.started:
                child.wait(deadline - time.monotonic())
        finally:  # also on a second Ctrl-C: nothing else would stop their sessions
            for child in self.started:
                child.kill()
