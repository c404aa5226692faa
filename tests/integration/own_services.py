"""A Redis or Kafka broker of one test's own, which the test may kill, freeze and restart.

Two kinds, as the session's services are (``CM_TEST_SERVICES``): a local process, faulted
with signals, or a container, faulted through the container API. Either restarts on its
port with its data, so every client configured with its address finds it again.
"""

from __future__ import annotations

import abc
import contextlib
import os
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from collection_manager.config import InfraConfig
from collection_manager.config.services import Service
from collection_manager.devservices.kafka_broker import start_kafka
from collection_manager.devservices.processes import stop_pid
from collection_manager.devservices.redis_server import start_redis
from tests.integration.service_containers import ServiceContainer


class OwnService(abc.ABC):
    """A service only this test uses; ``outage`` records when the last fault began and ended
    (monotonic seconds), to measure recovery against."""

    outage: tuple[float, float] = (0.0, 0.0)

    @property
    @abc.abstractmethod
    def address(self) -> str: ...

    @abc.abstractmethod
    def _kill(self) -> None: ...

    @abc.abstractmethod
    def _start_again(self) -> None:
        """Returns once the service answers again."""

    @abc.abstractmethod
    def _freeze(self) -> None: ...

    @abc.abstractmethod
    def _thaw(self) -> None: ...

    @abc.abstractmethod
    def stop(self) -> None: ...

    def sigkill_and_restart(self, down_s: float) -> None:
        """SIGKILL, ``down_s`` seconds with nothing listening, then a restart."""
        began = time.monotonic()
        self._kill()
        time.sleep(down_s)
        self._start_again()
        self.outage = (began, time.monotonic())

    @contextlib.contextmanager
    def down(self) -> Iterator[None]:
        """SIGKILLed for the block's time, started again after it."""
        began = time.monotonic()
        self._kill()
        try:
            yield
        finally:
            self._start_again()
            self.outage = (began, time.monotonic())

    def pause(self, paused_s: float) -> None:
        """Frozen for ``paused_s`` seconds: connections stay open and nothing answers."""
        began = time.monotonic()
        self._freeze()
        try:
            time.sleep(paused_s)
        finally:
            self._thaw()
            self.outage = (began, time.monotonic())


class OwnProcess(OwnService):
    """A local process, as ``infra up`` starts it, in a state directory of its own."""

    def __init__(self, kind: str, state_dir: Path):
        self._start = start_redis if kind == "redis" else start_kafka
        self._config = InfraConfig(state_dir=state_dir)
        self._service: Service = self._start(self._config)

    @property
    def address(self) -> str:
        return self._service.address

    def _kill(self) -> None:
        os.kill(self._service.pid, signal.SIGKILL)
        stop_pid(self._service.pid, grace_s=0)  # reaps it

    def _start_again(self) -> None:
        self._service = self._start(self._config)

    def _freeze(self) -> None:
        os.kill(self._service.pid, signal.SIGSTOP)

    def _thaw(self) -> None:
        os.kill(self._service.pid, signal.SIGCONT)

    def stop(self) -> None:
        stop_pid(self._service.pid)


class OwnContainer(OwnService):
    """A container of the project's image: killed, started again, paused (cgroup freezer)."""

    def __init__(self, kind: str):
        self._container = ServiceContainer.redis() if kind == "redis" else ServiceContainer.kafka()

    @property
    def address(self) -> str:
        return self._container.address

    def _kill(self) -> None:
        self._container.kill()

    def _start_again(self) -> None:
        self._container.start_again()

    def _freeze(self) -> None:
        self._container.pause()

    def _thaw(self) -> None:
        self._container.unpause()

    def stop(self) -> None:
        self._container.remove()


def services_kind() -> str:
    """``CM_TEST_SERVICES``: how this session provides Kafka and Redis."""
    return os.environ.get("CM_TEST_SERVICES", "processes")


def start_own_service(kind: str, request: pytest.FixtureRequest, directory: Path) -> OwnService:
    """A ``redis`` or ``kafka`` of the caller's own, of the session's kind."""
    if services_kind() == "containers":
        request.getfixturevalue("docker_engine")  # the session's engine, shared
        return OwnContainer(kind)
    return OwnProcess(kind, directory / f"own-{kind}")
