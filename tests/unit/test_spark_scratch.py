"""Spark's scratch files go to a per-process folder of the state directory, not /tmp."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from spark_consumers.session import _scratch_dir


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
