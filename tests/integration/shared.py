"""Services shared by the pytest-xdist workers of a run, and by runs that overlap.

Each worker is a pytest session of its own, so a session fixture alone would start Kafka,
Redis or the Docker engine once per worker, and the first worker to finish would stop
them under the other. Here the first process that needs a service starts it, every
process that uses it is recorded, and the last one to let it go stops it. The record is a
file under a file lock: in the run's own temporary directory for Kafka and Redis in
containers; in the state directory for local Kafka and Redis processes (which ``infra
up`` records there, so runs that overlap use the same ones) and for the Docker engine
(runs that overlap, such as ``make test-images`` beside ``make test-processes``, use the
one engine). Without xdist
there is one user and this is a plain session fixture.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

JsonValue = Any


def run_dir(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The directory every worker of this run shares (the run's own basetemp without xdist)."""
    base = tmp_path_factory.getbasetemp()
    return base if worker_id == "master" else base.parent


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def _me() -> str:
    """This process, as a user: its pid and start time (a reused pid is another process)."""
    return f"{os.getpid()}@{_started_at(os.getpid())}"


def _started_at(pid: int) -> str:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "gone"
    return stat.rpartition(")")[2].split()[19]  # field 22, starttime, after the command


def _alive(user: str) -> bool:
    pid, _, started = user.partition("@")
    return _started_at(int(pid)) == started


@contextlib.contextmanager
def shared(
    name: str,
    directory: Path,
    start: Callable[[], JsonValue],
    stop: Callable[[JsonValue], None],
) -> Iterator[JsonValue]:
    """Yields the value ``start()`` returned for the first user of ``name``; ``stop(value)``
    runs when its last user lets it go. The value must be JSON (it crosses processes).

    Users are processes, recorded with their start time: one that died without letting go
    (a SIGKILLed run) is no longer counted, and when none is left alive, the next user
    starts the service again. A ``start`` that raises (or skips) records nothing.
    """
    directory.mkdir(parents=True, exist_ok=True)
    record_file, lock = directory / f"{name}.json", directory / f"{name}.lock"
    with _locked(lock):
        record = json.loads(record_file.read_text()) if record_file.exists() else {}
        users = [user for user in record.get("users", []) if _alive(user)]
        if not users:
            record["value"] = start()
        record["users"] = [*users, _me()]
        record_file.write_text(json.dumps(record))
    try:
        yield record["value"]
    finally:
        with _locked(lock):
            record = json.loads(record_file.read_text())
            record["users"] = [u for u in record["users"] if u != _me() and _alive(u)]
            if not record["users"]:
                record_file.unlink()
                stop(record["value"])
            else:
                record_file.write_text(json.dumps(record))
