"""A chaos run: the replicated deployment under steady load while the nemesis of a seed
(``tests/model/nemesis.py``) injects its faults; then, every fault healed
and the consumer caught up, the verdict (``chaos_check.py``).

The load: the consumer (``consume``, with ``CM_REDIS_REPLICA_ACKS``), the controller's
lease loop (``controller run``), agents (``replica run``, simulated replicas whose changes
go on for ``AGENT_STEPS`` steps of each incarnation, then refreshes and heartbeats), and two
threads of random appends and deletes. ``test_chaos.py`` runs it for about two minutes;
``make soak SECONDS=...`` for as long as asked (``main``). ``CM_CHAOS_SEED`` chooses the
seed (default: a random one); every run prints it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import random
import shutil
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

from collection_manager.config import InfraConfig, from_env
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from producers.agent import TTL_COLLECTIONS
from schemas.introspection import introspection_specs
from tests.integration.chaos_check import Verdict, judge
from tests.integration.chaos_deployment import Deployment
from tests.integration.chaos_faults import Nemesis
from tests.integration.chaos_services import Services, replicated_services
from tests.integration.consumer_process import consumer_env
from tests.integration.workload import applying, create_specs, produce_until
from tests.support import assert_eventually

SEED_SETTING = "CM_CHAOS_SEED"
AGENT_STEPS = 120  # 30 s of changes at 250 ms a step
START_AGENTS = 3
# Every replica of a primary must confirm a write: then no promoted replica can lack one
# (docs/concepts/requests-and-ordering.md); with fewer, the one the cluster elects only *normally*
# holds it.
REPLICA_ACKS = 2
SETTLE_TIMEOUT_S = 600.0


def chaos_seed() -> int:
    """``CM_CHAOS_SEED``, or a new random seed."""
    given = os.environ.get(SEED_SETTING, "").strip()
    return int(given) if given else random.SystemRandom().randrange(1 << 32)


def fleet_suffix(unique: str) -> str:
    return f"-fleet-{unique}"


def process_settings(unique: str, replica_acks: int) -> dict[str, str]:
    """The ``CM_*`` settings every process of the run shares."""
    return {
        "CM_REDIS_REPLICA_ACKS": str(replica_acks),
        # Short: a batch held up by replicas away is tried again soon.
        "CM_REDIS_REPLICA_ACK_TIMEOUT_MS": "2000",
        "CM_REPLICA_NAMESPACE": f"cm:replicas:{unique}",
        # The agents' collections: not those of the random producers (create_specs), whose
        # deletes would retract the agents' rows.
        "CM_COLLECTION_SUFFIX": fleet_suffix(unique),
        # Longer than most faults' holds (an agent killed comes back before its lease ends
        # more often than not), short enough that a lease does end now and then.
        "CM_REPLICA_TTL_MS": "10000",
        "CM_HEARTBEAT_INTERVAL_MS": "300",
        "CM_LEASE_CHECK_INTERVAL_MS": "500",
        "CM_STEP_INTERVAL_MS": "250",
        # Rows outlive the run: the model never expires a row (test_row_ttl.py tests expiry).
        "CM_ROW_TTL_MS": str(24 * 3600 * 1000),
        "CM_PUBLISH_BATCH_ROWS": "100",
    }


@dataclasses.dataclass
class Report:
    """What a run survived, what it saw, and its verdict."""

    seed: int
    seconds: float  # of faults
    survived: Counter[str]
    notes: Counter[str]
    agent_exits: Counter[str]
    problems: list[str]  # not a mismatch, yet a failure: an exit, a fault not healed
    verdict: Verdict | None
    timings: dict[str, float]

    @property
    def ok(self) -> bool:
        return not self.problems and self.verdict is not None and self.verdict.total == 0

    def lines(self) -> list[str]:
        lines = [
            f"chaos seed {self.seed} ({SEED_SETTING}={self.seed} gives the same schedule)",
            f"faults for {self.seconds:.0f} s; survived {sum(self.survived.values())}:",
            *(f"  {kind}: {n}" for kind, n in sorted(self.survived.items())),
            "what they caused:",
            *(f"  {note}: {n}" for note, n in sorted(self.notes.items())),
            "agents that stopped by themselves (started again):",
            *(f"  {n} x {why}" for why, n in self.agent_exits.most_common()),
            "timings: " + ", ".join(f"{k} {v:.0f} s" for k, v in self.timings.items()),
        ]
        lines += self.verdict.lines() if self.verdict else ["no verdict"]
        lines += [f"problem: {problem}" for problem in self.problems]
        return lines


class _Loop(threading.Thread):
    """Calls ``step`` every ``interval`` seconds until stopped; keeps what it raised."""

    def __init__(self, name: str, step: Callable[[], None], interval: float) -> None:
        super().__init__(name=name, daemon=True)
        self._step, self._interval = step, interval
        self.halt = threading.Event()
        self.failures: list[str] = []

    def run(self) -> None:
        while not self.halt.wait(self._interval):
            try:
                self._step()
            except Exception as exc:
                self.failures.append(f"{self.name}: {exc!r}")

    def stop(self) -> None:
        self.halt.set()
        self.join(120)


@contextlib.contextmanager
def _producing(kafka: str, topic: str, specs: list[CollectionSpec]) -> Iterator[Callable[[], None]]:
    """Two threads of random requests (``workload.py``); yields what stops them."""
    stop = threading.Event()
    failures: list[BaseException] = []

    def produce(producer: int) -> None:
        try:
            produce_until(kafka, topic, specs, producer, stop, 0.02)
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=produce, args=(p,), daemon=True) for p in range(2)]
    for thread in threads:
        thread.start()

    def halt() -> None:
        stop.set()
        for thread in threads:
            thread.join(120)
        if failures:
            raise AssertionError(f"a producer failed: {failures[0]!r}")

    try:
        yield halt
    finally:
        stop.set()


def run_chaos(seed: int, seconds: float, folder: Path, replica_acks: int = REPLICA_ACKS) -> Report:
    """The whole run in ``folder``: services, load, faults, healing, verdict."""
    began = time.monotonic()
    timings: dict[str, float] = {}
    unique = f"chaos{seed}"
    topic = f"chaos-{seed}"
    say(f"chaos seed {seed}; services starting in {folder}")
    with replicated_services(folder, topic) as services:
        timings["services start"] = time.monotonic() - began
        url = services.redis.every_node_url
        store = RedisStore.connect(url, load_functions=True)
        specs = create_specs(store, unique)
        suffix = fleet_suffix(unique)
        fleet = [
            dataclasses.replace(spec, name=spec.name + suffix) for spec in introspection_specs()
        ]
        for spec in fleet:
            store.create_collection(spec)
        env = consumer_env(services.brokers.bootstrap, url, topic, folder)
        env |= process_settings(unique, replica_acks)
        agent_argv = ["--steps", str(AGENT_STEPS), "--source", "simulated",
                      "--workers", "2", "--dataflows", "2"]  # fmt: skip
        deployment = Deployment(env, folder, agent_argv)
        nemesis = Nemesis(services, deployment, seed)
        supervisor = _Loop("supervisor", deployment.supervise, 0.5)
        problems: list[str] = []
        verdict = None
        try:
            with _producing(services.brokers.bootstrap, topic, specs) as stop_producing:
                deployment.start_consumer()
                deployment.start_controller()
                for _ in range(START_AGENTS):
                    deployment.add_agent()
                supervisor.start()
                assert_eventually(applying(store, specs), timeout=300, interval=1)
                timings["until the consumer applied"] = time.monotonic() - began
                say("load running; faults begin")
                faults_began = time.monotonic()
                nemesis.run(seconds)
                timings["faults"] = time.monotonic() - faults_began
                say("faults over; healing and settling")
                healing = time.monotonic()
                services.wait_kafka_in_sync()
                services.wait_redis_whole()
                stop_producing()
            live, removed = _settle(deployment, supervisor, problems)
            timings["settling"] = time.monotonic() - healing
            say(f"settled: {len(live)} live agents, {len(removed)} removed; judging")
            judging = time.monotonic()
            quiet = {s.name for s in specs} | {
                s.name for s in fleet if s.name.removesuffix(suffix) not in TTL_COLLECTIONS
            }
            verdict = judge(
                services.brokers.bootstrap, topic, url, specs + fleet, quiet, fleet, live, removed
            )
            timings["verdict"] = time.monotonic() - judging
            if deployment.consumer is None or deployment.consumer.poll() is not None:
                problems.append("the consumer did not run at the end")
        finally:
            supervisor.stop()
            deployment.stop()
        problems += nemesis.errors + deployment.unexpected + supervisor.failures
    if not problems and verdict is not None and verdict.total == 0:
        _keep_only_logs(services)  # else the topic and the nodes' data stay, to look into
    timings["whole run"] = time.monotonic() - began
    return Report(
        seed, timings.get("faults", 0.0), nemesis.survived, nemesis.notes,
        deployment.agent_exits, problems, verdict, timings,
    )  # fmt: skip


def _settle(
    deployment: Deployment, supervisor: _Loop, problems: list[str]
) -> tuple[dict[str, tuple[Path, int]], set[str]]:
    """Waits until every agent published its last change and the controller's records
    agree with the processes; then stops the controller, so that membership stands still
    while the verdict reads. Returns the live agents' state files and epochs, and the
    removed ids."""

    def settled() -> None:
        agents = deployment.snapshot()
        for agent in agents:
            if agent.retiring and agent.running():
                deployment.finish_removal(agent)  # its removal was refused meanwhile
            assert not agent.retiring, f"{agent.replica_id} is being removed"
            assert agent.running(), f"{agent.replica_id} is starting again"
            assert agent.state_file.exists(), f"{agent.replica_id} is still publishing"
        members = deployment.members()
        removing = sorted(i for i, m in members.items() if m["state"] == "removing")
        assert not removing, f"still being removed: {removing}"
        for agent in agents:
            member = members.get(agent.replica_id, {})
            assert (member.get("state"), member.get("epoch")) == ("active", agent.epoch()), (
                f"{agent.replica_id}: {member}, its agent at epoch {agent.epoch()}"
            )

    assert_eventually(settled, SETTLE_TIMEOUT_S, 2.0)
    supervisor.stop()
    deployment.stop_controller()
    members = deployment.members()
    live = {}
    for agent in deployment.snapshot():
        member = members.get(agent.replica_id, {})
        epoch = agent.epoch()
        current = (member.get("state"), member.get("epoch")) == ("active", epoch)
        if agent.running() and epoch and current:
            live[agent.replica_id] = (agent.state_file, epoch)
        else:
            problems.append(f"agent {agent.replica_id} stopped while the run settled: {member}")
    removed = {i for i, m in members.items() if m["state"] == "removed" and i not in live}
    return live, removed


def _keep_only_logs(services: Services) -> None:
    """Once the services stopped, drops their data (a Redis node's AOF holds 96 MiB per
    lost tail), keeps their logs and the processes' logs."""
    for node in services.redis.nodes:
        for data in node.log.parent.glob("appendonly*"):
            if data.is_dir():
                shutil.rmtree(data, ignore_errors=True)
            else:
                data.unlink(missing_ok=True)
    for broker in services.brokers.nodes:
        shutil.rmtree(broker.home / "data", ignore_errors=True)


def say(line: str) -> None:
    print(f"[chaos {time.strftime('%H:%M:%S')}] {line}", flush=True)


def main(argv: list[str] | None = None) -> int:
    """``make soak SECONDS=...``: one run; exit 1 unless it ended with no mismatch."""
    parser = argparse.ArgumentParser(prog="make soak", description=__doc__)
    parser.add_argument("--seconds", type=float, default=600.0, help="of faults (default 600)")
    parser.add_argument(
        "--replica-acks", type=int, default=REPLICA_ACKS,
        help=f"CM_REDIS_REPLICA_ACKS of every process (default {REPLICA_ACKS})",
    )  # fmt: skip
    args = parser.parse_args(argv)
    seed = chaos_seed()
    stamp = time.strftime("%Y%m%d-%H%M%S")
    folder = from_env(InfraConfig).state_dir / "soak" / f"{stamp}-{seed}"
    report = run_chaos(seed, args.seconds, folder, args.replica_acks)
    print("\n".join(report.lines()))
    print(f"logs: {folder / 'logs'}")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
