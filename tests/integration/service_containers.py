"""Kafka and Redis as testcontainers of the project's images (``docker/build.sh``).

The engine here has no bridge, so each container runs on the host network and listens on
a loopback port chosen for it, given in its environment (testcontainers' port mapping
does not apply). Readiness is the same check as for local processes: Redis answers PING,
the broker answers a metadata request.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from testcontainers.core.container import DockerContainer
from testcontainers.core.docker_client import DockerClient

from collection_manager.devservices.kafka_broker import kafka_answers
from collection_manager.devservices.processes import LOOPBACK, free_port
from collection_manager.devservices.redis_server import redis_answers

READY_TIMEOUT_S = 90.0


class ServiceContainer:
    """One running service container: its address, and the container API to fault it."""

    def __init__(self, image: str, env: dict[str, str], address: str, answers: Callable[[], bool]):
        self.address = address
        self._answers = answers
        self._container = DockerContainer(image).with_kwargs(network_mode="host")
        for key, value in env.items():
            self._container.with_env(key, value)
        self._container.start()
        self.wait_until_ready()

    @classmethod
    def redis(cls) -> ServiceContainer:
        port = free_port()
        url = f"redis://{LOOPBACK}:{port}/0"
        return cls("cm-redis:latest", {"REDIS_PORT": str(port)}, url, lambda: redis_answers(url))

    @classmethod
    def kafka(cls) -> ServiceContainer:
        port, controller_port = free_port(), free_port()
        env = {"KAFKA_PORT": str(port), "KAFKA_CONTROLLER_PORT": str(controller_port)}
        address = f"{LOOPBACK}:{port}"
        return cls("cm-kafka:latest", env, address, lambda: kafka_answers(address))

    def wait_until_ready(self) -> None:
        deadline = time.monotonic() + READY_TIMEOUT_S
        while not self._answers():
            wrapped = self._container.get_wrapped_container()
            wrapped.reload()
            if wrapped.status == "exited" or time.monotonic() > deadline:
                logs = wrapped.logs(tail=30).decode(errors="replace")
                raise AssertionError(f"{self._container.image} did not answer:\n{logs}")
            time.sleep(0.2)

    def kill(self) -> None:
        """SIGKILL: the process is gone at once; the container's data stays."""
        self._container.get_wrapped_container().kill()

    def start_again(self) -> None:
        """Starts the killed container again (same port, same data) and waits until ready."""
        self._container.get_wrapped_container().start()
        self.wait_until_ready()

    def pause(self) -> None:
        """Freezes every process of the container: connections stay open, nothing answers."""
        self._container.get_wrapped_container().pause()

    def unpause(self) -> None:
        self._container.get_wrapped_container().unpause()

    @property
    def id(self) -> str:
        return str(self._container.get_wrapped_container().id)

    def remove(self) -> None:
        """Stops and removes the container with its anonymous volumes."""
        self._container.stop()

    @staticmethod
    def remove_by_id(container_id: str) -> None:
        """Removes a container another process of this run started (``shared.py``)."""
        DockerClient().client.containers.get(container_id).remove(force=True, v=True)
