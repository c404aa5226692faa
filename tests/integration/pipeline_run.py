"""The whole pipeline under load, for tests that run it against other services: a
``consumer run`` process, two producer threads of the test's collections and a fleet of agents
with their controller, stopped again whatever the test does."""

from __future__ import annotations

import dataclasses
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from collection_manager.core.specs import CollectionSpec
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.fleet import Fleet, replica_config
from tests.integration.workload import produce_until


@dataclasses.dataclass
class PipelineRun:
    """A running pipeline: the consumer, its log and environment, the fleet."""

    consumer: subprocess.Popen[bytes]
    log: Path
    env: dict[str, str]
    fleet: Fleet
    _stop: threading.Event
    _producers: list[threading.Thread]

    def stop_producing(self) -> None:
        """Stops the producer threads (the fleet's agents keep running)."""
        self._stop.set()
        for thread in self._producers:
            thread.join(60)

    def consumer_log(self) -> str:
        return self.log.read_text()

    def crash_consumer(self) -> None:
        """SIGKILLs the consumer wherever it is (mid-batch, between two collections' calls)
        and starts another with the same checkpoint and settings."""
        kill(self.consumer)
        self.consumer = start_consumer(self.env, self.log)


@contextmanager
def pipeline_under_load(
    kafka: str,
    redis_url: str,
    topic: str,
    unique: str,
    specs: list[CollectionSpec],
    tmp_path: Path,
    consumer_settings: dict[str, str] | None = None,
) -> Iterator[PipelineRun]:
    """Starts the consumer (with ``consumer_settings`` added to its environment), the
    producers and the fleet; stops them all on the way out."""
    log = tmp_path / "consumer.log"
    env = consumer_env(kafka, redis_url, topic, tmp_path) | (consumer_settings or {})
    env["CM_REPLICA_NAMESPACE"] = replica_config(unique).replica_namespace
    consumer = start_consumer(env, log)
    stop = threading.Event()
    producers = [
        threading.Thread(target=produce_until, args=(kafka, topic, specs, p, stop, 0.02))
        for p in range(2)
    ]
    fleet: Fleet | None = None
    run: PipelineRun | None = None
    try:
        for thread in producers:
            thread.start()
        fleet = Fleet.start(kafka, redis_url, topic, unique, max_steps=20)
        run = PipelineRun(consumer, log, env, fleet, stop, producers)
        yield run
    finally:
        stop.set()
        if fleet is not None:
            fleet.stop()
        # The consumer running now: crash_consumer replaced the one started here.
        for process in [consumer] if run is None else [consumer, run.consumer]:
            if process.poll() is None:
                kill(process)
