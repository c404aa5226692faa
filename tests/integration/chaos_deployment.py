"""The processes of a chaos run, as an operator runs them: one ``consume``, one
``controller run`` and a few ``replica run`` agents, each started, SIGKILLed and started
again by its pid.

A supervisor (``supervise``, called in a loop) does what systemd would: an agent that
stopped by itself (its lease ended, an add the replication barrier refused) is started
again as a new incarnation; the consumer and the controller never stop by themselves, so
their exits are kept as findings (``unexpected``) and they are started again.
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

from tests.integration.consumer_process import kill, run_cli, start_consumer

RESTART_AFTER_S = 3.0  # an agent whose add was refused is not started again at once
REMOVE_ATTEMPTS = 6


@dataclasses.dataclass
class Agent:
    """One incarnation's process of a replica."""

    replica_id: str
    incarnation: int
    process: subprocess.Popen[bytes]
    log: Path
    state_file: Path
    down: bool = False  # SIGKILLed by the nemesis, to be started again
    retiring: bool = False  # its removal was asked: its exit is expected
    exited_at: float | None = None

    def running(self) -> bool:
        return self.process.poll() is None

    def epoch(self) -> int | None:
        """The epoch it printed once added, if it got that far."""
        found = re.search(r"running at epoch (\d+)", self.log.read_text(errors="replace"))
        return int(found.group(1)) if found else None

    def last_words(self) -> str:
        """Why it stopped, without its id and epoch (so that exits can be counted by kind)."""
        last = re.sub(r"replica \S+ epoch \d+ ", "", last_line(self.log))
        return re.sub(r"127\.0\.0\.1:\d+", "a node", last)[:110]


def last_line(log: Path) -> str:
    """The last line a process wrote: its error, when it stopped by itself."""
    lines = [line for line in log.read_text(errors="replace").splitlines() if line]
    return lines[-1] if lines else "no output"


class Deployment:
    """The run's processes, by role; every method may be called from any lane's thread."""

    def __init__(self, env: dict[str, str], folder: Path, agent_argv: list[str]) -> None:
        self.env = env
        self.logs = folder / "logs"
        self.states = folder / "states"
        self.logs.mkdir(parents=True, exist_ok=True)
        self.states.mkdir(parents=True, exist_ok=True)
        self._agent_argv = agent_argv  # source and --steps options of every agent
        self.consumer: subprocess.Popen[bytes] | None = None
        self.controller: subprocess.Popen[bytes] | None = None
        self.agents: dict[str, Agent] = {}
        self.retired: set[str] = set()  # replica ids removed and not added again
        self.unexpected: list[str] = []  # exits of the consumer or the controller
        self.agent_exits: Counter[str] = Counter()  # agents that stopped by themselves
        self._incarnations: Counter[str] = Counter()
        self._ids = 0
        self._lock = threading.RLock()
        self._consumer_down = self._controller_down = False

    # The consumer and the controller

    @property
    def consumer_log(self) -> Path:
        return self.logs / "consumer.log"

    def start_consumer(self) -> None:
        with self._lock:
            self.consumer = start_consumer(self.env, self.consumer_log)
            self._consumer_down = False

    def kill_consumer(self) -> None:
        with self._lock:
            self._consumer_down = True
            if self.consumer is not None and self.consumer.poll() is None:
                kill(self.consumer)  # its process group: the Spark JVM and workers too

    def start_controller(self) -> None:
        with self._lock:
            self.controller = self._spawn(["controller", "run"], self.logs / "controller.log")
            self._controller_down = False

    def kill_controller(self) -> None:
        with self._lock:
            self._controller_down = True
            if self.controller is not None:
                _kill_group(self.controller)

    def stop_controller(self) -> None:
        """SIGTERM, as an operator stops it: it must exit 0."""
        with self._lock:
            self._controller_down = True
            controller = self.controller
        if controller is None or controller.poll() is not None:
            return
        controller.send_signal(signal.SIGTERM)
        try:
            code = controller.wait(60)
        except subprocess.TimeoutExpired:
            _kill_group(controller)
            code = None
        if code != 0:
            self.unexpected.append(f"controller exited with {code} on SIGTERM")

    # Agents

    def add_agent(self, replica_id: str | None = None) -> str:
        """Starts an agent of ``replica_id`` (default: a new id); it adds its replica."""
        with self._lock:
            if replica_id is None:
                self._ids += 1
                replica_id = f"a{self._ids}"
            self.retired.discard(replica_id)
            self._launch(replica_id)
            return replica_id

    def live_ids(self) -> list[str]:
        """Agents running as they should (not down, not retiring), by id."""
        with self._lock:
            return sorted(
                i for i, a in self.agents.items() if not a.down and not a.retiring and a.running()
            )

    def snapshot(self) -> list[Agent]:
        """The agents now (the supervisor changes the table meanwhile)."""
        with self._lock:
            return list(self.agents.values())

    def replica_count(self) -> int:
        """Replicas the run keeps: agents not retiring, running or down for a restart."""
        with self._lock:
            return sum(not agent.retiring for agent in self.agents.values())

    def kill_agent(self, replica_id: str) -> bool:
        """SIGKILLs the agent unless another lane took it meanwhile (then False)."""
        with self._lock:
            agent = self.agents.get(replica_id)
            if agent is None or agent.down or agent.retiring:
                return False
            agent.down = True
            _kill_group(agent.process)
            return True

    def restart_agent(self, replica_id: str) -> None:
        with self._lock:
            self._launch(replica_id)

    def retire(self, replica_id: str) -> bool:
        """Removes the replica as an operator does (``replica remove``); its agent then
        stops itself at its next heartbeat. Asked again while the barrier refuses it.
        False when another lane took the agent meanwhile."""
        with self._lock:
            agent = self.agents.get(replica_id)
            if agent is None or agent.down or agent.retiring:
                return False
            agent.retiring = True
        self.finish_removal(agent)
        return True

    def finish_removal(self, agent: Agent) -> None:
        """``replica remove`` until the retiring ``agent`` stopped (or attempts ran out)."""
        for _ in range(REMOVE_ATTEMPTS):
            run_cli(
                ["replicas", "remove", agent.replica_id, "--reason", "chaos", "--yes"],
                120,
                **self.env,
            )
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                if not agent.running():
                    return
                time.sleep(0.5)

    def supervise(self) -> None:
        """One pass: starts again what stopped by itself (see the module's docstring)."""
        with self._lock:
            if not self._consumer_down and self.consumer and self.consumer.poll() is not None:
                code, words = self.consumer.returncode, last_line(self.consumer_log)[:300]
                self.unexpected.append(f"consumer exited with {code} ({words})")
                self.start_consumer()
            controller = self.controller
            if not self._controller_down and controller and controller.poll() is not None:
                words = last_line(self.logs / "controller.log")[:300]
                self.unexpected.append(f"controller exited with {controller.returncode} ({words})")
                self.start_controller()
            for replica_id, agent in list(self.agents.items()):
                if agent.down or agent.running():
                    continue
                if agent.retiring:
                    del self.agents[replica_id]
                    self.retired.add(replica_id)
                elif agent.exited_at is None:
                    agent.exited_at = time.monotonic()
                    self.agent_exits[agent.last_words()] += 1
                elif time.monotonic() - agent.exited_at >= RESTART_AFTER_S:
                    self._launch(replica_id)

    def members(self) -> dict[str, dict[str, object]]:
        """The controller's member records (``replicas --all``), by replica id."""
        done = run_cli(["replicas", "list", "--all", "--format", "json"], 120, **self.env)
        if done.returncode != 0:
            raise AssertionError(f"replicas failed: {done.stderr[-500:]}")
        return {row["replica_id"]: row for row in json.loads(done.stdout)}

    def stop(self) -> None:
        """SIGKILLs every process of the run (agents are not removed: nothing to clean)."""
        with self._lock:
            self._consumer_down = self._controller_down = True
            for agent in self.agents.values():
                _kill_group(agent.process)
            if self.controller is not None:
                _kill_group(self.controller)
            if self.consumer is not None and self.consumer.poll() is None:
                kill(self.consumer)

    def _launch(self, replica_id: str) -> None:
        self._incarnations[replica_id] += 1
        n = self._incarnations[replica_id]
        state_file = self.states / f"{replica_id}-{n}.json"
        argv = ["replicas", "run", "--id", replica_id, "--state-file", str(state_file)]
        log = self.logs / f"agent-{replica_id}-{n}.log"
        process = self._spawn(argv + self._agent_argv, log)
        self.agents[replica_id] = Agent(replica_id, n, process, log, state_file)

    def _spawn(self, argv: list[str], log: Path) -> subprocess.Popen[bytes]:
        with open(log, "ab") as out:
            return subprocess.Popen(
                [sys.executable, "-m", "collection_manager.cli.main", *argv],
                env=self.env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # its own group: killed whole, by its pid
            )


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(30)
