"""A user's terminal session for a test: the ``collection-manager`` commands a reader of the
README's five-minute tour types, as child processes in one environment, each with its output kept.

Every process it starts is stopped by ``close``: SIGTERM to its process group, SIGKILL to
what is left after a grace period; a process is known by its ``Popen`` (pid), never by name.
"""

from __future__ import annotations

import dataclasses
import signal
import subprocess
from pathlib import Path

from tests.examples.pages import ROOT
from tests.examples.runner import stop_group

GRACE_S = 30.0
COMMAND_TIMEOUT_S = 180.0


@dataclasses.dataclass
class Started:
    """A long-running command: its process and the file its output goes to."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def output(self) -> str:
        """What it printed so far (stdout and stderr)."""
        return self.log.read_text(errors="replace")


class UserSession:
    """Commands run from the repo root with ``.venv/bin`` first on ``PATH``.

    Args:
        env: the environment of every command.
        logs: the directory of the long-running commands' outputs.
    """

    def __init__(self, env: dict[str, str], logs: Path) -> None:
        self.env = env
        self.logs = logs
        self.started: list[Started] = []
        self.outputs: dict[str, str] = {}  # every ended command's output, by its line

    def run(
        self, command: str, timeout: float = COMMAND_TIMEOUT_S
    ) -> subprocess.CompletedProcess[str]:
        """Runs ``command`` (a shell line, pipes and all) to its end; stdout and stderr kept."""
        process = subprocess.Popen(
            ["bash", "-c", command],
            cwd=ROOT,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,  # a timeout stops the whole pipeline
        )
        try:
            stdout, stderr = process.communicate(timeout=timeout)
        finally:
            stop_group(process)
        self.outputs[command] = stdout + stderr
        return subprocess.CompletedProcess(command, process.returncode, stdout, stderr)

    def start(self, name: str, command: str) -> Started:
        """Starts ``command`` in the background, its output to ``<logs>/<name>.log``."""
        self.logs.mkdir(parents=True, exist_ok=True)
        log = self.logs / f"{name}.log"
        with open(log, "wb") as out:
            process = subprocess.Popen(
                ["bash", "-c", f"exec {command}"],
                cwd=ROOT,
                env=self.env,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.started.append(Started(name, process, log))
        return self.started[-1]

    def stop(self, started: Started, sig: int = signal.SIGTERM) -> int:
        """Sends ``sig`` to ``started`` alone, as a user's ``kill``; its exit status."""
        started.process.send_signal(sig)
        try:
            return started.process.wait(GRACE_S)
        finally:
            stop_group(started.process)

    def close(self) -> None:
        """Stops every process started here that still runs, and what it started."""
        for started in self.started:
            stop_group(started.process)
