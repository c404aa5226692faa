"""Replicas and the controller: ``replicas list|run|sources|remove``, ``controller run``."""

from __future__ import annotations

import argparse
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collection_manager import devservices
from collection_manager.answers import to_json
from collection_manager.cli.confirm import add_confirmation, stop_before
from collection_manager.cli.output import TableView, add_format_option, moment, plural, show
from collection_manager.cli.signals import stop_on_signals
from collection_manager.cli.source_options import (
    DEFAULT_SOURCE,
    RUN_PROG,
    HelpWithSources,
    run_sources,
)
from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, from_env
from collection_manager.control.controller import Controller, ReplicaStatus, now_ms
from collection_manager.control.errors import NotAMemberError
from collection_manager.control.members import REMOVED
from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.specs import CollectionSpec
from collection_manager.observability.endpoint import (
    Endpoint,
    parse_address,
    process_registry,
    serve,
)
from collection_manager.observability.health import Health
from collection_manager.reading.replicas import replicas_of
from collection_manager.storage.replication import Durability

if TYPE_CHECKING:
    from producers.agent import ReplicaAgent
    from producers.subscribe import Source


@dataclasses.dataclass(frozen=True)
class AgentSources:
    """What ``replicas run --source`` chose: the sources, their collections, the step."""

    name: str
    collectors: Sequence[Any]  # the source's own metrics, if it has any
    sources: Mapping[str, Source]
    specs: Sequence[CollectionSpec]
    expiring: frozenset[str]
    step_interval_ms: int


def register(commands: Any) -> None:
    """Adds ``replicas`` and ``controller``."""
    replicas = commands.add_parser(
        "replicas", help="list replicas, run a replica agent, or remove a replica"
    )
    actions = replicas.add_subparsers(dest="action", required=True)
    listing = actions.add_parser("list", help="replicas, epochs, leases, heartbeats")
    add_format_option(listing, {"replicas list": replicas_json(EXAMPLE_REPLICAS, EXAMPLE_NOW)})
    listing.add_argument(
        "--all",
        action="store_true",
        help="also the removed replicas still within the retention (CM_REPLICA_RETENTION_MS)",
    )
    listing.set_defaults(run=run_replicas)
    run = actions.add_parser(
        "run", help="add a replica and run its agent until SIGTERM", add_help=False
    )
    run.add_argument(
        "-h",
        "--help",
        action=HelpWithSources,
        help="show this help, then each source's own options, and exit",
    )
    run.add_argument("--id", required=True, dest="replica_id", help="the replica id")
    run.add_argument(
        "--source",
        default=DEFAULT_SOURCE,
        help=f"what to introspect (default {DEFAULT_SOURCE}); its own options follow it "
        "(below, and in `collection-manager replicas sources`)",
    )
    run.add_argument(
        "--rate",
        type=float,
        help="steps per second (default: one per CM_STEP_INTERVAL_MS, 1,000 ms: 1)",
    )
    run.add_argument(
        "--steps", type=int, help="stop changing after this many steps (default: never)"
    )
    run.add_argument(
        "--duration", type=float, help="stop after this many seconds (default: until stopped)"
    )
    run.add_argument(
        "--replace",
        action="store_true",
        help="when an agent still runs under this id (a live member), fence its epoch and "
        "run this one instead (default: refuse)",
    )
    run.add_argument(
        "--state-file",
        type=Path,
        help="with --steps: once they are all acknowledged, write the agent's rows there "
        "(JSON; default: none)",
    )
    run.set_defaults(run=run_replica, takes_source_options=True)
    sources = actions.add_parser(
        "sources", help="the sources `replicas run --source` can name, with their options"
    )
    sources.set_defaults(run=run_sources)
    remove = actions.add_parser("remove", help="retract a replica's rows and fence its epoch")
    remove.add_argument("replica_id", help="the replica's id")
    remove.add_argument(
        "--reason",
        default="removed by an operator",
        help="recorded with the removal (default: removed by an operator)",
    )
    add_confirmation(remove)
    remove.set_defaults(run=run_remove)

    controller = commands.add_parser("controller", help="the controller's lease loop")
    loops = controller.add_subparsers(dest="action", required=True)
    loop = loops.add_parser(
        "run", help="remove replicas whose lease expired, until SIGTERM or Ctrl-C"
    )
    loop.add_argument(
        "--duration", type=float, help="stop after this many seconds (default: run until stopped)"
    )
    loop.set_defaults(run=run_controller)


def _controller(endpoints: devservices.Endpoints) -> Controller:
    consumer = from_env(ConsumerConfig)
    return Controller.connect(
        endpoints.kafka_bootstrap,
        endpoints.redis_url,
        consumer.topic,
        from_env(ReplicaConfig),
        Durability.of(consumer),
    )


_AGENT_SETTING = "CM_AGENT_METRICS_ADDRESS"


def _wait(stop: threading.Event, duration: float | None, done: Callable[[], bool]) -> None:
    """Until a signal, ``duration`` seconds, or ``done()``."""
    deadline = None if duration is None else time.monotonic() + duration
    while not stop.wait(0.2) and not done():
        if deadline is not None and time.monotonic() >= deadline:
            return


def _until_stopped(agent: ReplicaAgent, state_file: Path | None) -> Callable[[], bool]:
    """``done`` of :func:`_wait`; also writes ``state_file`` once, when the agent settled."""
    from producers.agent import save_state

    saved = False

    def done() -> bool:
        nonlocal saved
        # Settled, then not stopped: its subscribes finished their steps, none was cancelled.
        if state_file is not None and not saved and agent.settled and not agent.stopped:
            save_state(state_file, agent.state())
            saved = True
        return agent.stopped

    return done


def _agent_sources(args: argparse.Namespace, replica: ReplicaConfig) -> AgentSources:
    """The source ``--source`` names, its options parsed and checked (before connecting)."""
    from producers.sources.plugin import SourceContext, load_source, parse_options

    plugin = load_source(args.source)
    options = parse_options(plugin, getattr(args, "source_args", []), RUN_PROG)
    step_interval_ms = replica.step_interval_ms
    if args.rate:
        step_interval_ms = max(1, round(1000 / args.rate))
    context = SourceContext(args.replica_id, step_interval_ms, replica.row_ttl_ms)
    sources = dict(plugin.create(options, context))
    declared = {c.name for c in plugin.collections}
    if set(sources) - declared:
        raise CollectionManagerError(
            f"source {plugin.name} publishes {sorted(set(sources) - declared)}, which it does "
            f"not declare (it declares {sorted(declared)})"
        )
    specs = [c.spec(replica.collection_suffix) for c in plugin.collections]
    expiring = frozenset(c.name for c in plugin.collections if c.expires)
    collectors = tuple(getattr(plugin, "collectors", ()))
    return AgentSources(plugin.name, collectors, sources, specs, expiring, step_interval_ms)


def run_replica(args: argparse.Namespace) -> int:
    """Adds the replica, runs its agent, and removes it again on a clean stop."""
    from producers.agent import AgentConfig, ReplicaAgent
    from producers.replica_process import ReplicaProcess

    if args.state_file is not None and args.steps is None:
        # The state is written once the agent published its last step; without one, never.
        raise CollectionManagerError("--state-file needs --steps")
    replica = from_env(ReplicaConfig)
    _check_address(replica.agent_metrics_address, _AGENT_SETTING)
    chosen = _agent_sources(args, replica)
    endpoints = devservices.running(from_env(InfraConfig))
    controller = _controller(endpoints)
    overrides: dict[str, Any] = {
        "step_interval_ms": chosen.step_interval_ms,
        "max_steps": args.steps,
    }
    bootstrap = endpoints.kafka_bootstrap
    config = AgentConfig.of(controller.config, bootstrap, controller.topic, **overrides)
    process: ReplicaProcess | None = None
    endpoint: Endpoint | None = None
    health = Health()
    try:
        # Before anything is declared or served: a second agent of a live replica refuses.
        running = controller.check_replaceable(args.replica_id, args.replace)
        if running is not None:
            print(
                f"replica {args.replica_id}: replacing the running epoch {running.epoch}; "
                "it is fenced and its rows retracted",
                flush=True,
            )
        stop = stop_on_signals()
        agent = ReplicaAgent(
            args.replica_id,
            config,
            sources=chosen.sources,
            expiring=chosen.expiring,
            still_member=controller.is_current,
        )
        process = ReplicaProcess(controller, args.replica_id, agent, chosen.specs, chosen.name)
        process.declare()
        # Before the replica is added: a listen address that is taken adds nothing.
        address = controller.config.agent_metrics_address
        endpoint = _serve_agent(agent, address, health, chosen.collectors)
        epoch = process.start()
        at = "" if endpoint is None else f"; metrics and health at {endpoint.url}"
        print(f"replica {args.replica_id} running at epoch {epoch}{at}", flush=True)
        _wait(stop, args.duration, _beating(health, _until_stopped(agent, args.state_file)))
        # Stopped by itself: removed (by the controller or an operator), or it failed.
        on_its_own = process.stop("agent stopping", removal="agent stopped")
        print(f"replica {args.replica_id} epoch {epoch} stopped: {agent.reason}")
        return 1 if on_its_own else 0
    finally:
        if process is not None:
            process.abandon("agent failing")
        if endpoint is not None:
            endpoint.close()
        controller.close()


def _serve_agent(
    agent: ReplicaAgent, address: str, health: Health, collectors: Sequence[Any] = ()
) -> Endpoint | None:
    """The agent's metrics and health at ``address`` (none when it is empty)."""
    from producers.metrics import AgentCollector

    if not address:
        return None
    health.watch_loop("agent", max_age_s=30.0)
    health.add_check("epoch", lambda: f"stopped: {agent.reason}" if agent.stopped else None)
    registry = process_registry()
    registry.register(AgentCollector(agent))
    for collector in collectors:
        registry.register(collector)
    return serve(address, _AGENT_SETTING, registry, health)


def _check_address(address: str, setting: str) -> None:
    """A listen address that is no host:port is refused before anything connects."""
    if address:
        parse_address(address, setting)


def _beating(health: Health, done: Callable[[], bool]) -> Callable[[], bool]:
    """``done``, telling ``health`` that the agent's loop went round each time."""

    def beating() -> bool:
        health.beat("agent")
        return done()

    return beating


def run_remove(args: argparse.Namespace) -> int:
    """Removes a replica, once confirmed: retracts its rows everywhere and fences its epoch."""
    controller = _controller(devservices.running(from_env(InfraConfig)))
    try:
        what = (
            f"remove replica {args.replica_id}: retract its rows from every collection and "
            "fence its epoch (an agent still running under it stops)"
        )
        if (code := stop_before(args, what)) is not None:
            return code
        epoch = controller.remove_replica(args.replica_id, args.reason)
    finally:
        controller.close()
    if epoch is None:
        raise NotAMemberError(args.replica_id)
    print(f"removed replica {args.replica_id}: epoch {epoch} fenced, its rows retracted")
    return 0


def replicas_table(rows: Sequence[ReplicaStatus], now_ms: int) -> TableView:
    """One line per replica, or how to start the first one."""
    columns = ["id", "epoch", "state", "lease expires", "last heartbeat", "added", "reason"]
    cells = [
        (
            r.replica_id,
            r.epoch,
            r.state,
            moment(r.lease_expires_at, now_ms),
            moment(r.last_heartbeat_at, now_ms),
            moment(r.added_at, now_ms),
            r.reason,
        )
        for r in rows
    ]
    empty = "no live replicas; start one with `collection-manager replicas run --id r1`"
    return TableView(plural(len(rows), "replica"), columns, cells, empty, null="-")


EXAMPLE_REPLICAS = [
    ReplicaStatus("r1", 3, "active", 1735732810000, 1735732800500, 1735732000000, ""),
    ReplicaStatus("r2", 1, "removed", None, None, 1735731000000, "lease expired"),
]
EXAMPLE_NOW = 1735732805000


def replicas_json(rows: Sequence[ReplicaStatus], now: int) -> list[dict[str, Any]]:
    """Each replica as the API's ``/api/v1/replicas`` holds it (answers.models.Replica),
    its lease left by this machine's clock."""
    return [to_json(replica) for replica in replicas_of(rows, now)]


def run_replicas(args: argparse.Namespace) -> int:
    """Prints the live replicas (with ``--all`` the removed ones the retention keeps too),
    each with its epoch, state, lease expiry and last heartbeat."""
    controller = _controller(devservices.running(from_env(InfraConfig), needs=("redis",)))
    try:
        rows = [r for r in controller.replicas() if args.all or r.state != REMOVED]
    finally:
        controller.close()
    now = now_ms()
    show(
        args.format,
        replicas_json(rows, now),
        replicas_table(rows, now),
        headers=not args.no_headers,
    )
    return 0


def run_controller(args: argparse.Namespace) -> int:
    """Runs the lease loop until SIGTERM/SIGINT (or ``--duration``)."""
    from collection_manager.control.service import METRICS_SETTING, run_service

    _check_address(from_env(ReplicaConfig).controller_metrics_address, METRICS_SETTING)
    endpoints = devservices.running(from_env(InfraConfig))
    controller = _controller(endpoints)
    config = controller.config

    def started(endpoint: Endpoint | None) -> None:
        print(
            f"controller: leases of {config.replica_ttl_ms} ms, "
            f"checked every {config.lease_check_interval_ms} ms"
            + ("" if endpoint is None else f"; metrics and health at {endpoint.url}"),
            flush=True,
        )

    stop = stop_on_signals()
    timer = threading.Timer(args.duration or 0, stop.set)
    if args.duration is not None:
        timer.start()
    try:
        run_service(controller, endpoints.redis_url, stop, started)
    finally:
        timer.cancel()
    return 0
