"""Starting, watching and stopping the local service processes, by pid."""

from __future__ import annotations

import contextlib
import logging
import os
import select
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path

from collection_manager.config.services import pid_alive, start_time
from collection_manager.core.errors import InfrastructureError

logger = logging.getLogger(__name__)

LOOPBACK = "127.0.0.1"


def free_port() -> int:
    """A loopback port that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOOPBACK, 0))
        return int(sock.getsockname()[1])


def port_is_free(port: int) -> bool:
    """Whether a server could listen on ``port`` on loopback.

    With SO_REUSEADDR, as Redis and Kafka bind: connections of a killed server that linger
    in TIME_WAIT must not move its restart to another port, away from every configured
    client.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((LOOPBACK, port))
        except OSError:
            return False
        return True


def choose_port(configured: int, memo: Path, what: str) -> int:
    """The configured port (which must be free), else the one used last time, else any.

    Reusing the last port keeps a restarted broker's advertised address stable.
    """
    if configured:
        if not port_is_free(configured):
            raise InfrastructureError(
                f"port {configured} on {LOOPBACK} for {what} is taken by another process; "
                f"stop it, or set the port to 0 to pick a free one"
            )
        return configured
    with contextlib.suppress(OSError, ValueError):
        last = int(memo.read_text())
        # A restart keeps the port every client was given: a client's connection may hold
        # it for a moment after the old process died, so wait a little for it.
        deadline = time.monotonic() + 10
        while not port_is_free(last) and time.monotonic() < deadline:
            time.sleep(0.2)
        if port_is_free(last):
            return last
        logger.warning("port %d of %s stayed taken; %s moves to another port", last, what, what)
    port = free_port()
    memo.parent.mkdir(parents=True, exist_ok=True)
    memo.write_text(str(port))
    return port


def accepts_connections(port: int, timeout: float = 0.5) -> bool:
    """Whether something listens on ``port`` on loopback."""
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout):
            return True
    except OSError:
        return False


@contextlib.contextmanager
def interrupts_deferred() -> Iterator[None]:
    """Holds back SIGINT (Ctrl-C) during the block and raises it as KeyboardInterrupt after.

    For steps that must not be cut in two: a service spawned but not yet recorded would run
    on with nobody knowing its pid. Only the main thread can handle signals; elsewhere the
    block runs unprotected.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, _frame: caught.append(signum))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
    if caught:
        raise KeyboardInterrupt


def start_process(
    cmd: Sequence[str],
    log_path: Path,
    cwd: Path | None = None,
    record: Callable[[int], None] = lambda _pid: None,
    env: Mapping[str, str] | None = None,
) -> int:
    """Starts ``cmd`` in its own session with output to ``log_path``; returns its pid.

    ``env``: its whole environment (default: this process's).

    Its own session keeps a Ctrl-C in the terminal from killing the service mid-write;
    it is stopped explicitly by pid instead. So ``record`` gets the pid before a Ctrl-C
    can interrupt: whoever started it can always find it again.
    """
    log_path.parent.mkdir(parents=True, exist_ok=True)
    with interrupts_deferred(), open(log_path, "ab") as log:
        proc = subprocess.Popen(
            list(cmd),
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            cwd=cwd,
            env=None if env is None else dict(env),
            start_new_session=True,
        )
        record(proc.pid)
    return proc.pid


# What became of a recorded process when it was to be stopped (``stop_recorded``).
STOPPED, GONE, REPLACED, STILL_RUNNING = "stopped", "gone", "replaced", "still running"


def stop_recorded(pid: int, started: int, grace_s: float = 15.0) -> str:
    """Stops ``pid`` only if it is still the process that started at ``started``.

    SIGTERM, then SIGKILL after ``grace_s``, both through a pidfd: it stays bound to the
    process it was opened for, so no signal reaches a process that took the pid over
    meanwhile. Returns ``STOPPED``; ``GONE`` (no such process) or ``REPLACED`` (another
    process holds the pid now), when nothing was signalled; or ``STILL_RUNNING`` when it
    outlived SIGKILL too (a process stuck in the kernel).
    """
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        return GONE
    try:
        # Checked after the pidfd is open: the pidfd names the process the check saw.
        now = start_time(pid)
        if now != started:
            return GONE if now is None else REPLACED
        for signum, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(pidfd, signum)
            if select.select([pidfd], [], [], wait_s)[0]:  # readable once it exited
                _reap(pid)
                return STOPPED
        return STILL_RUNNING
    finally:
        os.close(pidfd)


def _reap(pid: int) -> None:
    # A child of this very process stays a zombie until waited for.
    with contextlib.suppress(ChildProcessError, OSError):
        os.waitpid(pid, os.WNOHANG)


def stop_pid(pid: int, grace_s: float = 15.0) -> None:
    """SIGTERM, then SIGKILL after ``grace_s``; returns once the process is gone."""
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while pid_alive(pid) and time.monotonic() < deadline:
        _reap(pid)
        time.sleep(0.1)
    if pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        deadline = time.monotonic() + 5
        while pid_alive(pid) and time.monotonic() < deadline:
            _reap(pid)
            time.sleep(0.05)
    _reap(pid)


def log_tail(path: Path, lines: int = 25) -> str:
    """The last ``lines`` lines of a log file, for error messages."""
    try:
        text = path.read_text(errors="replace")
    except OSError:
        return f"(no log at {path})"
    return "\n".join(text.splitlines()[-lines:])


def wait_until_ready(
    what: str,
    pid: int,
    log_path: Path,
    ready: Callable[[], bool],
    timeout_s: float,
    stop_on_timeout: bool = True,
) -> None:
    """Polls ``ready`` until it holds; fails clearly if the process dies or time runs out.

    Args:
        stop_on_timeout: stop the process when it never answered or the wait was
            interrupted (one we just started); False for one that was already running,
            which is left alone.
    """
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if ready():
                return
            if not pid_alive(pid):
                _reap(pid)
                raise InfrastructureError(
                    f"{what} exited during start-up; the end of its log {log_path}:\n"
                    f"{log_tail(log_path)}"
                )
            time.sleep(0.25)
    except KeyboardInterrupt:
        if stop_on_timeout:  # Ctrl-C: a half-started service is nobody's to keep
            with interrupts_deferred():
                stop_pid(pid)
        raise
    if stop_on_timeout:
        stop_pid(pid)
    raise InfrastructureError(
        f"{what} did not answer within {timeout_s:.0f} s (raise CM_STARTUP_TIMEOUT_S if the "
        f"machine is slow); the end of its log {log_path}:\n{log_tail(log_path)}"
    )
