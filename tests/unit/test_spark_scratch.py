"""Spark's scratch files go to a per-process folder of the state directory, not /tmp, and
its Unix sockets with them when their paths fit."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from spark_consumers.session import (
    SOCKET_NAME_BYTES,
    SOCKET_PATH_BYTES,
    _scratch_dir,
    unix_sockets_fit,
)


def test_folders_of_processes_that_are_gone_are_removed(tmp_path: Path) -> None:
    gone = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True
    )
    dead = tmp_path / gone.stdout.decode().strip()
    (dead / "blockmgr-1").mkdir(parents=True)
    other = tmp_path / "notes"  # not a pid: never touched
    other.mkdir()
    parent_pid = tmp_path / str(os.getppid())  # a live process
    parent_pid.mkdir()

    mine = _scratch_dir(tmp_path)

    assert mine == tmp_path / str(os.getpid()) and mine.is_dir()
    assert not dead.exists()
    assert other.is_dir() and parent_pid.is_dir()


def test_spark_sockets_fit_a_scratch_folder_of_the_default_depth() -> None:
    default = Path("/root/.local/state/collection-manager/spark-scratch/4194304")
    assert unix_sockets_fit(default)
    # The longest folder that fits leaves room for the socket's name and no more.
    longest = Path("/" + "x" * (SOCKET_PATH_BYTES - SOCKET_NAME_BYTES - 1))
    assert unix_sockets_fit(longest)
    assert not unix_sockets_fit(longest / "y")


def test_a_scratch_folder_too_deep_for_sockets_falls_back_to_tcp_and_says_why(
    caplog: pytest.LogCaptureFixture,
) -> None:
    deep = Path("/tmp") / ("d" * 80)
    with caplog.at_level(logging.WARNING, logger="spark_consumers.session"):
        assert not unix_sockets_fit(deep)
    assert f"{deep} is too long for a Unix socket path (106 bytes" in caplog.text
