"""The record of locally started services: pid, address and log, in a state file."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path


@dataclasses.dataclass(frozen=True)
class Service:
    """One started service process.

    Attributes:
        name: ``kafka`` or ``redis``.
        pid: the process to stop.
        address: bootstrap servers or Redis URL.
        log: path of its log file.
        marker: a string on its command line (a record made before ``started`` existed
            is identified by it, but never signalled).
        started: its start time in clock ticks since boot (``processes.start_time``):
            with the pid, what identifies it for sure before it is signalled.
    """

    name: str
    pid: int
    address: str
    log: str
    marker: str
    started: int | None = None


def load_services(path: Path) -> dict[str, Service]:
    """The services recorded in ``path`` (none when it does not exist)."""
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError:
        return {}
    return {name: Service(**fields) for name, fields in raw.items()}


def save_services(path: Path, services: dict[str, Service]) -> None:
    """Writes the record atomically (a crash never leaves half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({n: dataclasses.asdict(s) for n, s in services.items()}, indent=2))
    tmp.replace(path)
