"""Session services shared by the pytest-xdist workers of one run.

Each worker is a pytest session of its own, so a session fixture alone would start Kafka,
Redis or the Docker engine once per worker, and the first worker to finish would stop
them under the other. Here the first worker that needs a service starts it, every worker
that uses it is counted, and the last one to let it go stops it. The count lives in a file
of this run's own temporary directory, under a file lock, so it never outlives the run.
Without xdist there is one user and this is a plain session fixture.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
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


@contextlib.contextmanager
def shared(
    name: str,
    directory: Path,
    start: Callable[[], JsonValue],
    stop: Callable[[JsonValue], None],
) -> Iterator[JsonValue]:
    """Yields the value ``start()`` returned for the first user of ``name``; ``stop(value)``
    runs when its last user lets it go. The value must be JSON (it crosses processes).

    A ``start`` that raises (or skips) records nothing: the next user tries again.
    """
    record_file, lock = directory / f"{name}.json", directory / f"{name}.lock"
    with _locked(lock):
        record = json.loads(record_file.read_text()) if record_file.exists() else {"users": 0}
        if record["users"] == 0:
            record["value"] = start()
        record["users"] += 1
        record_file.write_text(json.dumps(record))
    try:
        yield record["value"]
    finally:
        with _locked(lock):
            record = json.loads(record_file.read_text())
            record["users"] -= 1
            if record["users"] == 0:
                record_file.unlink()
                stop(record["value"])
            else:
                record_file.write_text(json.dumps(record))
