"""Real Kafka and Redis for tests and the demo: configured ones, or local processes.

``up`` uses ``CM_KAFKA_BOOTSTRAP`` / ``CM_REDIS_URL`` when set and starts nothing for them;
otherwise it reuses the services a previous ``up`` recorded (when they still answer) or
starts new ones on loopback. ``down`` stops exactly the recorded processes, each known by
its pid and start time, so a pid reused by another process is never signalled.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import dataclasses
import fcntl
import functools
import logging
from collections.abc import Callable, Collection, Iterator, Mapping
from pathlib import Path

from collection_manager.config import InfraConfig
from collection_manager.config.services import (
    Endpoints,
    Service,
    command_line,
    configured,
    is_running,
    load_services,
    pid_alive,
    save_services,
)
from collection_manager.config.services import running as running  # the CLI's way in
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_broker import kafka_answers, start_kafka
from collection_manager.devservices.processes import (
    GONE,
    STILL_RUNNING,
    interrupts_deferred,
    stop_recorded,
    wait_until_ready,
)
from collection_manager.devservices.redis_server import redis_answers, start_redis
from collection_manager.devservices.replicated import Records, bring_up
from collection_manager.devservices.replicated_layout import (
    Layout,
    check_combination,
    is_replicated,
    load_layout,
)

logger = logging.getLogger(__name__)

_ANSWERS: dict[str, Callable[[str], bool]] = {"kafka": kafka_answers, "redis": redis_answers}
_START: dict[str, Callable[[InfraConfig, Callable[[Service], None]], Service]] = {
    "kafka": start_kafka,
    "redis": start_redis,
}


@dataclasses.dataclass(frozen=True)
class ServiceStatus:
    """One line of ``infra status``."""

    name: str
    source: str  # "configured", "local" or "not running"
    address: str
    pid: int | None
    answers: bool
    log: str


@contextlib.contextmanager
def _locked(config: InfraConfig) -> Iterator[None]:
    # Two concurrent `up`s (a test run beside the demo) must not start two brokers.
    config.state_dir.mkdir(parents=True, exist_ok=True)
    with open(config.state_dir / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def up(config: InfraConfig) -> Endpoints:
    """Makes Kafka and Redis available and says where they are."""
    with _locked(config):
        recorded = load_services(config.services_file)
        addresses: dict[str, str] = {}
        started: list[str] = []
        for name in ("kafka", "redis"):
            given = configured(config, name)
            if given:
                if not _ANSWERS[name](given):
                    raise InfrastructureError(f"the configured {name} at {given} does not answer")
                addresses[name] = given
                continue
            old = recorded.get(name)
            if old and is_running(old):
                # Never restart a running service that is slow to answer: it may be busy
                # (a long script, loading its AOF), and killing it would lose work.
                answers = functools.partial(_ANSWERS[name], old.address)
                wait_until_ready(
                    name,
                    old.pid,
                    Path(old.log),
                    answers,
                    config.startup_timeout_s,
                    stop_on_timeout=False,
                )
                addresses[name] = old.address
                continue
            addresses[name] = _start(config, name, recorded).address
            started.append(name)
        return Endpoints(addresses["kafka"], addresses["redis"], tuple(started))


def _start(config: InfraConfig, name: str, recorded: dict[str, Service]) -> Service:
    """Starts ``name``, recorded in the state file from the moment its process exists.

    A Ctrl-C while it comes up stops it (``wait_until_ready``), and a start that failed
    leaves no record of it: nothing runs that the state file does not name.
    """

    def record(service: Service) -> None:
        recorded[name] = service
        save_services(config.services_file, recorded)

    try:
        return _START[name](config, record)
    except BaseException:
        with interrupts_deferred():
            started = recorded.get(name)
            if started is not None and not pid_alive(started.pid):
                del recorded[name]
                save_services(config.services_file, recorded)
        raise


@dataclasses.dataclass(frozen=True)
class Replicated:
    """What ``up_replicated`` made available: the deployment's layout (its addresses and
    settings), and the nodes this call started."""

    layout: Layout
    started: tuple[str, ...]


def up_replicated(config: InfraConfig, environ: Mapping[str, str]) -> Replicated:
    """Makes the replicated deployment available: three brokers and a Redis Cluster of three
    primaries with two replicas each, each node reused while its recorded process runs.

    Raises:
        UsageError: when the settings do not fit it (``check_combination``).
        InfrastructureError: when a node does not start or answer; what this call started
            is stopped again.
    """
    check_combination(config, load_layout(config.state_dir), environ)
    with _locked(config):
        recorded = load_services(config.services_file)
        records = Records(recorded, lambda: save_services(config.services_file, recorded))
        layout, started = bring_up(config, records)
        return Replicated(layout, tuple(started))


@dataclasses.dataclass(frozen=True)
class Stop:
    """What ``down`` did with one recorded service: ``outcome`` is one of ``STOPPED``,
    ``GONE``, ``REPLACED``, ``STILL_RUNNING`` (``processes.py``) or ``UNIDENTIFIED``."""

    name: str
    pid: int
    outcome: str


# A record made before start times were recorded, whose pid runs a process that mentions
# its marker: maybe the service, maybe not; it is neither signalled nor forgotten.
UNIDENTIFIED = "unidentified"


def down(config: InfraConfig, names: Collection[str] | None = None) -> list[Stop]:
    """Stops the recorded local services among ``names`` (default: every recorded one,
    the replicated deployment's nodes too), each only if its pid still names the process
    that was started (pid and start time); one per recorded service.

    A record is dropped once its process is gone (stopped, or found gone or replaced by
    another process), and kept while the process may still run.
    """
    # A Ctrl-C waits until the stops are done and recorded: one cut short would leave a
    # record of a service on its way out, or a service without one.
    with _locked(config), interrupts_deferred():
        recorded = load_services(config.services_file)
        chosen = [n for n in (recorded if names is None else names) if n in recorded]
        # In parallel: a broker of a cluster waits for its peers' quorum when it stops, so
        # one at a time the last would wait in vain until SIGKILL (and Redis nodes stopped
        # one by one slowly enough would fail over to each other first).
        with concurrent.futures.ThreadPoolExecutor(max(1, len(chosen))) as pool:
            outcomes = list(pool.map(lambda name: _stop(recorded[name]), chosen))
        stops = [
            Stop(name, recorded[name].pid, outcome)
            for name, outcome in zip(chosen, outcomes, strict=True)
        ]
        for stop in stops:
            if stop.outcome not in (STILL_RUNNING, UNIDENTIFIED):
                del recorded[stop.name]
        save_services(config.services_file, recorded)
    return stops


def _stop(service: Service) -> str:
    if service.started is not None:
        return stop_recorded(service.pid, service.started)
    if not pid_alive(service.pid):
        return GONE
    return legacy_outcome(command_line(service.pid), service.marker)


def legacy_outcome(line: bytes | None, marker: str) -> str:
    """What becomes of a record without a start time whose pid is alive, by its command
    line ``line`` (None: none could be read): ``GONE`` only when the line was read and
    lacks ``marker`` (another process holds the pid), else ``UNIDENTIFIED``. An unread
    line is no proof that the service is gone, so its record is kept."""
    return GONE if line is not None and marker.encode() not in line else UNIDENTIFIED


def status(config: InfraConfig) -> list[ServiceStatus]:
    """What each service is, where, and whether it answers."""
    recorded = load_services(config.services_file)
    rows = []
    for name in ("kafka", "redis"):
        given = configured(config, name)
        service = recorded.get(name)
        if given:
            rows.append(ServiceStatus(name, "configured", given, None, _ANSWERS[name](given), ""))
        elif service and is_running(service):
            rows.append(
                ServiceStatus(
                    name,
                    "local",
                    service.address,
                    service.pid,
                    _ANSWERS[name](service.address),
                    service.log,
                )
            )
        else:
            rows.append(ServiceStatus(name, "not running", "", None, False, ""))
    return rows + _replicated_status(recorded)


def _replicated_status(recorded: dict[str, Service]) -> list[ServiceStatus]:
    """A line per recorded node of the replicated deployment (none when it has none)."""
    rows = []
    for name in sorted(filter(is_replicated, recorded), key=_node_order):
        service = recorded[name]
        if not is_running(service):
            rows.append(ServiceStatus(name, "not running", "", service.pid, False, service.log))
            continue
        kind = name.partition("-")[0]
        address = service.address
        answers = _ANSWERS[kind](address)
        rows.append(ServiceStatus(name, "replicated", address, service.pid, answers, service.log))
    return rows


def _node_order(name: str) -> tuple[str, int]:
    kind, _, number = name.partition("-")
    return kind, int(number)
