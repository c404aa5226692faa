"""``replicas run``: one replica's agent, from the source ``--source`` names to its stop.

Its options are in ``cli/replicas.py``. The source is loaded and its options checked before
anything connects; the replica is added, its agent runs until a signal, ``--duration`` or
its own stop, and a clean stop removes the replica again.
"""

from __future__ import annotations

import argparse
import dataclasses
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from collection_manager import devservices
from collection_manager.cli.controller import check_address, connect_controller
from collection_manager.cli.signals import stop_on_signals
from collection_manager.cli.source_options import RUN_PROG
from collection_manager.config import InfraConfig, ReplicaConfig, from_env
from collection_manager.control.controller import Controller
from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.specs import CollectionSpec
from collection_manager.observability.endpoint import Endpoint, process_registry, serve
from collection_manager.observability.health import Health

if TYPE_CHECKING:
    from producers.agent import ReplicaAgent
    from producers.agent_config import AgentConfig
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
    from producers.agent_config import AgentConfig

    if args.state_file is not None and args.steps is None:
        # The state is written once the agent published its last step; without one, never.
        raise CollectionManagerError("--state-file needs --steps")
    replica = from_env(ReplicaConfig)
    check_address(replica.agent_metrics_address, _AGENT_SETTING)
    chosen = _agent_sources(args, replica)
    endpoints = devservices.running(from_env(InfraConfig))
    controller = connect_controller(endpoints)
    overrides: dict[str, Any] = {
        "step_interval_ms": chosen.step_interval_ms,
        "max_steps": args.steps,
    }
    bootstrap = endpoints.kafka_bootstrap
    config = AgentConfig.of(controller.config, bootstrap, controller.topic, **overrides)
    try:
        return _run_agent(args, controller, config, chosen)
    finally:
        controller.close()


def _run_agent(
    args: argparse.Namespace, controller: Controller, config: AgentConfig, chosen: AgentSources
) -> int:
    """Declares the collections, serves the metrics, adds the replica and runs its agent
    until it stops: 0 when stopped (then removed), 1 when it stopped by itself."""
    from producers.agent import ReplicaAgent
    from producers.replica_process import ReplicaProcess

    process: ReplicaProcess | None = None
    endpoint: Endpoint | None = None
    health = Health()
    try:
        _check_replaceable(controller, args.replica_id, args.replace)
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


def _check_replaceable(controller: Controller, replica_id: str, replace: bool) -> None:
    """Before anything is declared or served: a second agent of a live replica refuses;
    with ``--replace``, says whose epoch it fences."""
    running = controller.check_replaceable(replica_id, replace)
    if running is not None:
        print(
            f"replica {replica_id}: replacing the running epoch {running.epoch}; "
            "it is fenced and its rows retracted",
            flush=True,
        )


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


def _beating(health: Health, done: Callable[[], bool]) -> Callable[[], bool]:
    """``done``, telling ``health`` that the agent's loop went round each time."""

    def beating() -> bool:
        health.beat("agent")
        return done()

    return beating
