"""Runs one documentation example in a child process and says what went wrong.

Each example runs in a process group of its own, so that whatever it starts (a command
ending in ``&``, a Spark JVM) is stopped with it: SIGTERM to the group, SIGKILL to what is
left after a grace period.
"""

from __future__ import annotations

import dataclasses
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.examples.markdown import Example

# An interrupt is answered within seconds; a stopped group is gone within seconds.
GRACE_S = 30.0
_POLL_S = 0.2
_ERROR_LINE = re.compile(r"^error:", re.MULTILINE)
_TRACEBACK = "Traceback (most recent call last)"


@dataclasses.dataclass(frozen=True)
class Outcome:
    """How an example ended.

    Attributes:
        returncode: its exit status (negative: the signal that ended it); ``None`` when it
            had to be killed.
        output: its stdout and stderr, interleaved as they came.
        timed_out: whether it outlived its time (or, with ``until``, never got ready).
        interrupted_at: the length of ``output`` when it was interrupted as by Ctrl-C,
            ``None`` when it was not.
    """

    returncode: int | None
    output: str
    timed_out: bool
    interrupted_at: int | None = None


def run(
    example: Example,
    *,
    env: dict[str, str],
    cwd: Path,
    workdir: Path,
    timeout: float,
    python: str = sys.executable,
) -> Outcome:
    """Runs ``example`` in ``cwd`` with ``env``; its script and output go to ``workdir``.

    A shell example runs in ``bash -e`` (as a reader's shell, but stopping at the first
    failing command); a Python one is fed to ``python -`` (as pasted into it: the working
    directory is on ``sys.path``).
    """
    workdir.mkdir(parents=True, exist_ok=True)
    script, log = workdir / "example.txt", workdir / "output.txt"
    script.write_text(example.code)
    argv = ["bash", "-e", str(script)] if example.language == "sh" else [python, "-"]
    with open(script) as stdin, open(log, "wb") as out:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=stdin if example.language == "python" else subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            # Ctrl-C as a reader's terminal sends it: a test run started in the background
            # of a shell ignores SIGINT, and its children would inherit that.
            preexec_fn=_default_sigint,
        )
    try:
        if example.until is None:
            returncode, interrupted_at = _wait(process, timeout), None
        else:
            returncode, interrupted_at = _until_ready(process, log, example.until, timeout)
    finally:
        stop_group(process)
    output = log.read_text(errors="replace")
    return Outcome(returncode, output, returncode is None, interrupted_at)


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(process: subprocess.Popen[Any], timeout: float) -> int | None:
    try:
        return process.wait(timeout)
    except subprocess.TimeoutExpired:
        return None


def _until_ready(
    process: subprocess.Popen[bytes], log: Path, ready: str, timeout: float
) -> tuple[int | None, int | None]:
    """Waits for ``ready`` in the output, then interrupts the group as Ctrl-C would."""
    deadline = time.monotonic() + timeout
    while ready not in (output := log.read_text(errors="replace")):
        if process.poll() is not None:  # ended before it was ready: a failure as it is
            return process.returncode, None
        if time.monotonic() > deadline:
            return None, None
        time.sleep(_POLL_S)
    os.killpg(process.pid, signal.SIGINT)
    return _wait(process, GRACE_S), len(output)


def stop_group(process: subprocess.Popen[Any]) -> None:
    """Stops what is left of the process group ``process`` leads: SIGTERM, then SIGKILL
    (to the members that outlived the grace period); reaps ``process``."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        if not _signal_group(process.pid, sig):
            break
        if process.poll() is None:
            _wait(process, GRACE_S)
        deadline = time.monotonic() + GRACE_S
        # The leader is reaped by now, so a group that still answers has live members.
        while _signal_group(process.pid, 0) and time.monotonic() < deadline:
            time.sleep(_POLL_S)
        if not _signal_group(process.pid, 0):
            # Gone: its number is free, and the next process to lead a group with it (a
            # service another test started in its own session) must not get the SIGKILL.
            break
    process.wait()


def _signal_group(pgid: int, sig: int) -> bool:
    """Sends ``sig`` to the group; whether any process was in it."""
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        return False
    return True


# Spark's notices of nothing wrong, which a reader must not meet: its hostname resolving to
# loopback (the examples run on loopback), a clean stop's "Failed to cancel job group".
NOTICES = ("resolves to a loopback address", "Failed to cancel job group")


def problems(example: Example, outcome: Outcome) -> list[str]:
    """What a reader would call broken in ``outcome``, each one line (none: it works)."""
    found = []
    if outcome.timed_out and outcome.interrupted_at is not None:
        found.append(f"did not end within {GRACE_S:.0f} s of Ctrl-C")
    elif outcome.timed_out:
        what = f"did not print {example.until!r}" if example.until else "did not end"
        found.append(f"{what} within its time")
    elif outcome.interrupted_at is not None:
        if outcome.returncode not in (0, 130, -signal.SIGINT):
            found.append(f"exit status {outcome.returncode} after Ctrl-C (0 or 130 expected)")
    elif example.until is not None:  # it should have run until stopped
        found.append(
            f"ended with exit status {outcome.returncode} before it printed {example.until!r}"
        )
    elif outcome.returncode != 0:
        found.append(f"exit status {outcome.returncode}")
    checked = outcome.output
    if example.language == "python" and outcome.interrupted_at is not None:
        # Python ends a script on Ctrl-C with a KeyboardInterrupt traceback, by design.
        checked = checked[: outcome.interrupted_at]
    if _TRACEBACK in checked:
        found.append("printed a traceback")
    found += [f"printed {line!r}" for line in _error_lines(checked)]
    found += [f"printed Spark's notice {n!r} (nothing is wrong)" for n in NOTICES if n in checked]
    return [f"{example.location}: {problem}" for problem in found]


def _error_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if _ERROR_LINE.match(line)]
