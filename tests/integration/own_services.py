"""A Redis or Kafka broker of one test's own, which the test may kill, stop and restart.

Each restarts as ``infra up`` restarts a stopped service: on its recorded port, with its
data directory, so every client configured with its address finds it again.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import time
from collections.abc import Callable

from collection_manager.config import InfraConfig
from collection_manager.devservices.kafka_broker import start_kafka
from collection_manager.devservices.processes import stop_pid
from collection_manager.devservices.redis_server import start_redis
from collection_manager.devservices.services import Service


@dataclasses.dataclass
class OwnService:
    """A service only this test uses; ``outage`` records when the last fault began and ended
    (monotonic seconds), to measure recovery against."""

    config: InfraConfig
    start: Callable[[InfraConfig], Service]
    service: Service
    outage: tuple[float, float] = (0.0, 0.0)

    @classmethod
    def redis(cls, config: InfraConfig) -> OwnService:
        return cls(config, start_redis, start_redis(config))

    @classmethod
    def kafka(cls, config: InfraConfig) -> OwnService:
        return cls(config, start_kafka, start_kafka(config))

    @property
    def address(self) -> str:
        return self.service.address

    def sigkill_and_restart(self, down_s: float) -> None:
        """SIGKILL, ``down_s`` seconds with nothing listening, then a restart."""
        began = time.monotonic()
        os.kill(self.service.pid, signal.SIGKILL)
        stop_pid(self.service.pid, grace_s=0)  # reaps it
        time.sleep(down_s)
        self.service = self.start(self.config)  # returns once it answers again
        self.outage = (began, time.monotonic())

    def pause(self, paused_s: float) -> None:
        """SIGSTOP for ``paused_s`` seconds: connections stay open and nothing answers."""
        began = time.monotonic()
        os.kill(self.service.pid, signal.SIGSTOP)
        try:
            time.sleep(paused_s)
        finally:
            os.kill(self.service.pid, signal.SIGCONT)
            self.outage = (began, time.monotonic())

    def stop(self) -> None:
        stop_pid(self.service.pid)
