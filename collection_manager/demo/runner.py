"""The demonstration: the product end to end, with one replica removed and one killed.

``run_demo`` starts (or reuses) Kafka and Redis, the Spark consumer as its own process, and
one ``collection-manager replicas run`` process per replica agent; the demo's own controller
runs the lease loop, and ``collection-manager server run`` answers the HTTP API and the web
console, whose URL the demo prints first: the console shows the demo's fleet live. Once
every replica's rows are in Redis, the controller removes one replica (a fenced delete
retracts its rows at once) and the demo SIGKILLs another's agent (its rows stay until its
lease expires and the lease check removes it). The survivors publish a fixed number of
steps and then write what they hold to a state file. Once the consumer has applied
everything Kafka held by then, Redis is compared with those files, and the removed and
killed replicas with nothing. Whatever the demo started, it stops.

``run_demo`` reads in that order: ``opening.py`` opens the run's clients, ``launch.py``
starts the processes, ``lease_loop.py`` the controller's loop, ``phases.py`` plays the plan
and waits, then ``live_checks.py`` asks the live processes and ``verify.py`` compares the
rows for the verdict.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections import Counter
from collections.abc import Callable

from collection_manager import devservices
from collection_manager.config import InfraConfig, from_env
from collection_manager.control.controller import ReplicaStatus
from collection_manager.core.specs import Row
from collection_manager.demo.frames import Frame, Plan
from collection_manager.demo.launch import (
    start_agents,
    start_console,
    start_consumer,
    start_real_replica,
)
from collection_manager.demo.lease_loop import start_lease_loop
from collection_manager.demo.live_checks import check_console, check_real_replica, scrape_listeners
from collection_manager.demo.opening import open_run
from collection_manager.demo.options import DemoOptions
from collection_manager.demo.phases import DemoRun, Reporter
from collection_manager.demo.verify import Verification, verify
from producers.agent import load_state


@dataclasses.dataclass(frozen=True)
class DemoResult:
    """What the demo found.

    Attributes:
        plan: the replicas and their fates.
        verification: the verdict, per collection.
        stored: replica -> collection -> its rows in Redis at the end.
        held: survivor -> collection -> the rows its agent holds.
        statuses: replica -> the controller's record of it at the end.
        events: what happened, in order.
    """

    plan: Plan
    verification: Verification
    stored: dict[str, dict[str, Counter[Row]]]
    held: dict[str, dict[str, Counter[Row]]]
    statuses: dict[str, ReplicaStatus]
    events: tuple[str, ...]

    @property
    def verified(self) -> bool:
        """Whether Redis holds exactly what it must."""
        return self.verification.ok


@dataclasses.dataclass(frozen=True)
class Keep:
    """``demo --keep``: after the verdict, ``shown(result)`` once (the CLI prints the
    verdict), then every process and the console run on until ``released()`` holds or
    Ctrl-C; only then does the demo stop what it started."""

    shown: Callable[[DemoResult], None]
    released: Callable[[], bool] = lambda: False


def run_demo(options: DemoOptions, reporter: Reporter, keep: Keep | None = None) -> DemoResult:
    """Runs the demo and returns its verdict; stops everything it started, also on errors,
    at once after the verdict, or with ``keep`` once it is released.

    Raises:
        ValueError: for fewer than 3 replicas or a duration under 10 s.
        DemoError: when a process died or a wait timed out.
    """
    plan = Plan.of(options.replicas, options.duration_s, options.step_interval_ms)
    infra_config = demo_infra(from_env(InfraConfig))
    started = time.monotonic()
    reporter.show(Frame(0.0, "starting Kafka and Redis"))
    with contextlib.ExitStack() as stack:
        endpoints = devservices.up(infra_config)
        stack.callback(devservices.down, infra_config, endpoints.started)
        run = open_run(stack, options, plan, reporter, infra_config, endpoints, started)
        start_console(run, kept=keep is not None)
        start_consumer(run)
        start_agents(run, options, plan)
        start_real_replica(run)
        start_lease_loop(run, stack, endpoints.redis_url)
        run.play()
        result = _verdict(run, plan)
        if keep is not None:
            keep.shown(result)
            run.hold(keep.released)
        return result


def demo_infra(infra: InfraConfig) -> InfraConfig:
    """The demo's own state directory, ``<state dir>/demo``: the Kafka and Redis it starts
    keep their data there, so a later ``infra up`` starts clean, without the demo's batches
    and replicas (configured services, CM_KAFKA_BOOTSTRAP / CM_REDIS_URL, are used as
    they are)."""
    return dataclasses.replace(infra, state_dir=infra.state_dir / "demo")


def _verdict(run: DemoRun, plan: Plan) -> DemoResult:
    scrape_listeners(run, ["consumer", "controller", *plan.survivors])
    check_real_replica(run)
    check_console(run, plan)
    stored = run.observer.replica_rows(plan.fates)
    held = {replica: load_state(run.children.state_file(replica)) for replica in plan.survivors}
    verification = verify(stored, held, [plan.removed, plan.killed])
    run.phase = "verified" if verification.ok else "MISMATCH"
    run.refresh()
    return DemoResult(plan, verification, stored, held, run.observer.statuses(), tuple(run.events))
