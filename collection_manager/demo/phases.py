"""One demo run in motion: the plan carried out, its events, and the loop that watches it.

Every wait of the demo is the same loop, about twice a second: observe the pipeline, fail
at once if a process died that should not have, test the condition (which may act: remove
or kill a replica when the plan says so), note what changed as events, and draw a frame.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from typing import Protocol

from collection_manager.control.controller import Controller, now_ms
from collection_manager.control.members import ACTIVE, REMOVED
from collection_manager.core.errors import CollectionManagerError
from collection_manager.demo.children import Child, Children
from collection_manager.demo.frames import (
    KILL,
    REMOVE,
    SURVIVE,
    ConsumerView,
    Frame,
    Plan,
    ReplicaView,
)
from collection_manager.demo.observation import Observation, observe
from collection_manager.demo.observe import Observer, caught_up, recorded_after
from producers.agent import TTL_COLLECTIONS

TICK_S = 0.5
# The fate column before and after the plan's action (survivors have none).
_BEFORE = {SURVIVE: "survives", REMOVE: "to remove", KILL: "to kill"}
_AFTER = {REMOVE: "removed", KILL: "killed"}


class DemoError(CollectionManagerError):
    """The demo could not reach its verdict (a process died, a wait timed out)."""


class Reporter(Protocol):
    """Shows the frames the demo observes (a live view, plain lines, or nothing)."""

    def show(self, frame: Frame) -> None:
        """Shows one frame."""
        ...


class DemoRun:
    """The moving parts of one run.

    Args:
        plan: the replicas and their fates.
        reporter: shows each frame.
        observer: reads the pipeline.
        controller: the demo's controller (it removes one replica).
        children: starts and stops the consumer and agent processes.
        timeout_s: how long any one wait may take.
        started: when the demo started (``time.monotonic()``), for the elapsed time.
    """

    def __init__(
        self,
        plan: Plan,
        reporter: Reporter,
        observer: Observer,
        controller: Controller,
        children: Children,
        timeout_s: float,
        started: float,
    ) -> None:
        self.plan = plan
        self.observer = observer
        self.controller = controller
        self.children = children
        self.started = started
        self.phase = ""
        self.events: list[str] = []
        self.consumer: Child | None = None
        self.agents: dict[str, Child] = {}
        self.real: Child | None = None  # the replica of real data (launch.REAL_REPLICA)
        self.serve: Child | None = None  # `server run`: the HTTP API and the web console
        self.console = ""  # the console's URL, once it answers
        self.console_note = ""  # how long the console stays, said beside its URL
        self.listeners: dict[str, str] = {}  # process -> URL of its /metrics and health
        self._reporter = reporter
        self._timeout_s = timeout_s
        self._happened: dict[str, float] = {}  # fate -> when it was carried out
        self._noted: set[str] = set()
        self._t0 = self.started  # when the plan's clock starts (every replica visible)
        self._last = Observation({}, {}, {}, ConsumerView())
        self._lag_end: Mapping[int, int] | None = None  # None: the lag is of Kafka's now

    # Events

    def event(self, text: str) -> None:
        """Notes that something happened, with the time since the demo started."""
        self.events.append(f"{time.monotonic() - self.started:6.1f}s  {text}")

    def _note(self, key: str, text: str) -> None:
        if key not in self._noted:
            self._noted.add(key)
            self.event(text)

    # Waiting

    def wait_for(
        self, condition: Callable[[], bool], what: str, limit_s: float | None = None
    ) -> None:
        """Ticks until ``condition()`` holds.

        Raises:
            DemoError: when a child died that should run, or after ``limit_s`` (default
                the timeout).
        """
        limit = self._timeout_s if limit_s is None else limit_s
        deadline = time.monotonic() + limit
        while True:
            tick = time.monotonic()
            self._last = observe(self.observer, self._lag_end)
            self._check_children()
            done = condition()
            self._track()
            self._reporter.show(self.frame())
            if done:
                return
            if tick >= deadline:
                message = f"gave up after {limit:.0f}s waiting for {what}"
                raise DemoError(f"{message}; the logs are in {self.children.work_dir}")
            time.sleep(max(0.0, TICK_S - (time.monotonic() - tick)))

    def refresh(self) -> None:
        """Observes once more and shows it."""
        self._last = observe(self.observer, self._lag_end)
        self._reporter.show(self.frame())

    def consumer_ran_after(self, wall_s: float) -> bool:
        """Whether the consumer recorded a micro-batch that started after ``wall_s``."""
        return recorded_after(self.observer.progress(), wall_s)

    def all_visible(self) -> bool:
        """Whether every replica is an active member with a heartbeat seen and rows."""
        for replica in self.plan.fates:
            status = self._last.statuses.get(replica)
            if status is None or status.state != ACTIVE or status.last_heartbeat_at is None:
                return False
            if not self._last.rows_of(replica):
                return False
        return True

    def play(self) -> None:
        """Carries out the plan, until the survivors settled and the others are gone.

        Then waits until the consumer applied everything Kafka held at that point, so
        that the comparison afterwards is of final states, not of moving targets.
        """
        self.phase = "running"
        self._t0 = time.monotonic()
        self.wait_for(self._played, "the plan to play out", self.plan.duration_s + self._timeout_s)
        self.catch_up()

    def catch_up(self) -> None:
        """Waits until the consumer applied every request Kafka holds now."""
        target = self.observer.end_offsets()
        self.phase = "consumer catching up"
        self.wait_for(lambda: caught_up(self.observer.position(), target), "the consumer")
        # From here the frames' lag is of what Kafka held then, the state the comparison is
        # of: the controller's ticks and the survivors' heartbeats go on, and counting them
        # would show a lag of a few requests right after "caught up (lag 0)".
        self._lag_end = target
        self.event("consumer caught up: every request Kafka held then is applied (lag 0)")

    def hold(self, released: Callable[[], bool]) -> None:
        """After the verdict (``demo --keep``): everything runs on, watched and shown as
        before, until ``released()`` holds or Ctrl-C (or SIGTERM) ends the wait.

        Raises:
            DemoError: when a child that should run died meanwhile.
        """
        self._lag_end = None  # the lag of Kafka's now again: heartbeats and ticks go on
        self.phase = f"{self.phase}; kept running until Ctrl-C"
        try:
            self.wait_for(released, "Ctrl-C", limit_s=math.inf)
        except KeyboardInterrupt:
            self.event("Ctrl-C: the demo stops what it started")

    def _played(self) -> bool:
        self._act()
        pending = []
        if len(self._happened) < 2:
            return False
        if self.agents[self.plan.removed].running:
            pending.append(f"{self.plan.removed}'s agent to stop")
        killed = self._last.statuses.get(self.plan.killed)
        if killed is None or killed.state != REMOVED:
            pending.append(f"{self.plan.killed}'s lease to expire")
        unsettled = [r for r in self.plan.survivors if not self.children.state_file(r).exists()]
        if unsettled:
            pending.append(f"the last steps of {', '.join(unsettled)}")
        self.phase = f"waiting for {' and '.join(pending)}" if pending else "settled"
        return not pending

    def _act(self) -> None:
        """Removes or kills a replica when the plan says it is time."""
        for fate in self.plan.due(time.monotonic() - self._t0, list(self._happened)):
            if fate == REMOVE:
                replica = self.plan.removed
                epoch = self.controller.remove_replica(replica, "removed by the demo")
                self.event(f"controller removed {replica}: fenced delete of epoch {epoch}")
            else:
                replica, agent = self.plan.killed, self.agents[self.plan.killed]
                agent.kill()
                self.event(
                    f"SIGKILLed {replica}'s agent (pid {agent.pid}): no goodbye, no heartbeats"
                )
            self._happened[fate] = time.monotonic()

    # Observing

    def _check_children(self) -> None:
        for child in (self.consumer, self.real, self.serve):
            if child is not None and not child.running:
                raise DemoError(self._died(child))
        for replica, agent in self.agents.items():
            ends = self.plan.fates[replica] in self._happened  # removed or killed by the plan
            if not agent.running and not ends:
                raise DemoError(self._died(agent))

    @staticmethod
    def _died(child: Child) -> str:
        return f"{child.name} {child.describe()}; the end of {child.log}:\n{child.log_tail()}"

    def _track(self) -> None:
        """Notes the consequences the demo waits for, once each, with how long they took."""
        now, last, plan = time.monotonic(), self._last, self.plan
        removed, killed = plan.removed, plan.killed
        if (removed_at := self._happened.get(REMOVE)) is not None:
            after = f"{now - removed_at:.1f}s after its removal"
            if not last.rows_of(removed):
                self._note("removed rows", f"{removed}: 0 rows in Redis, {after}")
            if not self.agents[removed].running:
                self._note("removed agent", f"{removed}'s agent stopped itself: not a member")
        if (killed_at := self._happened.get(KILL)) is not None:
            after = f"{now - killed_at:.1f}s after the kill"
            status = last.statuses.get(killed)
            if status is not None and status.state == REMOVED:
                self._note("lease", f"controller: {killed}'s lease expired, removed {after}")
            expiring = [c for c in last.rows if c in TTL_COLLECTIONS]
            if last.rows_of(killed) and not any(last.rows[c][killed] for c in expiring):
                names = " and ".join(sorted(expiring))
                text = f"{killed}: its {names} rows expired one by one (TTL), {after}"
                self._note("killed ttl rows", text)
            if not last.rows_of(killed):
                self._note("killed rows", f"{killed}: 0 rows in Redis, {after}")
        for replica in plan.survivors:
            if self.children.state_file(replica).exists():
                steps = f"{plan.steps} steps published and acknowledged"
                self._note(f"settled {replica}", f"{replica} settled: {steps}")

    def frame(self) -> Frame:
        """The latest observation as the view shows it."""
        now = now_ms()
        replicas = []
        for replica, fate in self.plan.fates.items():
            status = self._last.statuses.get(replica)
            agent = self.agents.get(replica)
            lease = status.lease_expires_at if status else None
            replicas.append(
                ReplicaView(
                    replica_id=replica,
                    fate=_AFTER[fate] if fate in self._happened else _BEFORE[fate],
                    process=agent.describe() if agent else "-",
                    epoch=status.epoch if status else None,
                    state=status.state if status else None,
                    lease_s=None if lease is None else (lease - now) / 1000,
                    rows={c: counts[replica] for c, counts in self._last.rows.items()},
                )
            )
        return Frame(
            elapsed_s=time.monotonic() - self.started,
            phase=self.phase,
            collections=self.observer.collections,
            replicas=replicas,
            totals=self._last.totals,
            consumer=self._last.consumer,
            events=tuple(self.events),
            console=self.console,
            console_note=self.console_note,
        )
