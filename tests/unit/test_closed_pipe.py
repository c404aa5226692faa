"""A reader that stops reading (``collection-manager ... | head -1``) is no error.

The command ends quietly with 141 (128 + SIGPIPE), as git and coreutils do in a shell; no
``error:`` line, no ``Exception ignored`` from the flush at interpreter exit. The read end
of the pipe is closed before the command starts, so every write of it meets a closed pipe
(no race with a reader that is still there). No services: these commands need none.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from collection_manager.cli.faults import PIPE_CLOSED

COMMAND = [sys.executable, "-m", "collection_manager.cli.main"]


def _into_closed_pipe(argv: tuple[str, ...], state_dir: Path) -> subprocess.CompletedProcess[str]:
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run(
            [*COMMAND, *argv],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            env={**os.environ, "CM_STATE_DIR": str(state_dir)},
        )
    finally:
        os.close(write_end)
    return done


@pytest.mark.parametrize(
    "argv",
    [
        ("replicas", "sources"),  # pages of lines, written at exit's flush when piped
        ("infra", "status"),  # a table, from the state file alone
    ],
)
def test_a_closed_pipe_ends_the_command_quietly_with_141(
    argv: tuple[str, ...], tmp_path: Path
) -> None:
    done = _into_closed_pipe(argv, tmp_path)
    assert (done.returncode, done.stderr) == (PIPE_CLOSED, "")


@pytest.mark.parametrize("argv", [("--help",), ("replicas", "run", "--help")])
def test_help_into_a_closed_pipe_says_nothing(argv: tuple[str, ...], tmp_path: Path) -> None:
    # argparse drops a failed write of its help and exits 0: so with a help longer than
    # stdout's buffer (written at once); a shorter one fails at entry()'s flush: 141.
    done = _into_closed_pipe(argv, tmp_path)
    assert done.stderr == ""
    assert done.returncode in (0, PIPE_CLOSED)
