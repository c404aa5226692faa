"""The documented exit codes, from the console script as a shell sees them.

0 done, 1 a fault (here: a Redis that does not answer), 2 no valid use of the command line,
130 interrupted by Ctrl-C. No services: a Redis that never answers is a socket here.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

COMMAND = [sys.executable, "-m", "collection_manager.cli.main"]


def _run(*argv: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*COMMAND, *argv], capture_output=True, text=True, timeout=60, env={**os.environ, **env}
    )


@pytest.fixture
def silent_redis() -> Iterator[socket.socket]:
    """A listening socket that accepts and never answers: a Redis hung mid-way."""
    server = socket.create_server(("127.0.0.1", 0))
    yield server
    server.close()


def test_done_is_0_and_a_fault_is_1_and_bad_usage_is_2() -> None:
    assert _run("--version").returncode == 0
    refused = _run("collections", "query", "error_counts", CM_REDIS_URL="redis://127.0.0.1:1")
    assert refused.returncode == 1
    assert refused.stderr.startswith("error: Redis at redis://127.0.0.1:1 does not answer")
    usage = _run("collections", "query", "error_counts", "--limit", "0")
    assert usage.returncode == 2 and "must be at least 1, not 0" in usage.stderr
    assert _run("no-such-command").returncode == 2


def test_ctrl_c_is_130(silent_redis: socket.socket) -> None:
    port = silent_redis.getsockname()[1]
    env = {**os.environ, "CM_REDIS_URL": f"redis://127.0.0.1:{port}"}
    process = subprocess.Popen(
        [*COMMAND, "query", "error_counts"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A background shell job ignores SIGINT, and its children inherit that: restore it.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        connection, _ = silent_redis.accept()  # the command is waiting for Redis now
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=30)
        connection.close()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 130
    assert err.strip().splitlines()[-1] == "interrupted"
