"""Where Kafka and Redis are: the configured ones, or the local ones ``infra up`` recorded.

Every product entry point resolves the services here, the same way: the CLI's commands,
and the Spark SQL data sources in a user's own Spark session. Nothing here starts or
stops a process (``collection_manager/devservices`` does, and writes the record); this
only reads the record in the state directory and checks that each process still runs.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Collection
from pathlib import Path

from collection_manager.config.infra import InfraConfig
from collection_manager.core.errors import InfrastructureError


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
        started: its start time in clock ticks since boot (:func:`start_time`): with the
            pid, what identifies it for sure before it is signalled.
    """

    name: str
    pid: int
    address: str
    log: str
    marker: str
    started: int | None = None


@dataclasses.dataclass(frozen=True)
class Endpoints:
    """Where the services are, and which of them this call started."""

    kafka_bootstrap: str
    redis_url: str
    started: tuple[str, ...] = ()


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


def pid_alive(pid: int) -> bool:
    """Whether ``pid`` is a live process (a zombie counts as dead)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][:1] != "Z"
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def start_time(pid: int) -> int | None:
    """When ``pid`` started, in clock ticks since boot (``/proc/PID/stat`` field 22), or
    None when no live process has that pid. With the pid it names one process for sure: a
    pid the kernel hands out again comes with a later start time."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            fields = stat.read().rsplit(") ", 1)[1].split()
    except (OSError, IndexError):
        return None
    # fields[0] is field 3 (the state); a zombie has exited and only waits to be reaped.
    return None if fields[0] == "Z" else int(fields[19])


def command_line(pid: int) -> bytes | None:
    """The command line of ``pid`` (``/proc/PID/cmdline``), or None when none was read: no
    such process, or an empty answer, which the kernel gives at times for a live process
    that is busy starting (seen on a loaded machine), so it tells nothing about it."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read() or None
    except OSError:
        return None


def cmdline_contains(pid: int, marker: str) -> bool:
    """Whether the command line of ``pid`` mentions ``marker`` (guards against pid reuse)."""
    line = command_line(pid)
    return line is not None and marker.encode() in line


def is_running(service: Service) -> bool:
    """Whether the recorded process still runs (the same process: pid and start time)."""
    if service.started is None:  # recorded by an older version: known by its command line
        return pid_alive(service.pid) and cmdline_contains(service.pid, service.marker)
    return start_time(service.pid) == service.started


def configured(config: InfraConfig, name: str) -> str | None:
    """The address ``CM_KAFKA_BOOTSTRAP`` or ``CM_REDIS_URL`` gives ``name``, if any."""
    return config.kafka_bootstrap if name == "kafka" else config.redis_url


def running(config: InfraConfig, needs: Collection[str] = ("kafka", "redis")) -> Endpoints:
    """The configured or recorded services, for the product's commands.

    Unlike ``devservices.up`` it starts nothing: a command must not leave a broker running
    behind it. A service outside ``needs`` that is neither configured nor running has the
    address ``""`` (reads need only Redis, so they work while Kafka is down or absent).

    Raises:
        InfrastructureError: when a needed service is neither configured nor running.
    """
    recorded = load_services(config.services_file)
    addresses: dict[str, str] = {}
    for name in ("kafka", "redis"):
        given = configured(config, name)
        old = recorded.get(name)
        if given:
            addresses[name] = given
        elif old and is_running(old):
            addresses[name] = old.address
        elif name not in needs:
            addresses[name] = ""
        else:
            variable = "CM_KAFKA_BOOTSTRAP" if name == "kafka" else "CM_REDIS_URL"
            raise InfrastructureError(
                f"no {name} to use: start one with `collection-manager infra up` "
                f"(state dir {config.state_dir}) or set {variable}"
                + _replicated_hint(recorded, name)
            )
    return Endpoints(addresses["kafka"], addresses["redis"])


def _replicated_hint(recorded: dict[str, Service], name: str) -> str:
    """What to do when ``infra up --replicated`` runs (its nodes recorded as ``kafka-1``,
    ``redis-1``, ...): its settings are never picked up unless exported."""
    nodes = [s for n, s in recorded.items() if n.startswith(f"{name}-") and is_running(s)]
    if not nodes:
        return ""
    return (
        "; the replicated deployment runs: export the settings "
        '`eval "$(collection-manager infra up --replicated)"` prints'
    )
