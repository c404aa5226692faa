"""What a handler reads from (:class:`Sources`) and the bounds of its request (:class:`Call`)."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import redis

from collection_manager.config import HttpConfig
from collection_manager.http.limits import Deadline
from collection_manager.storage.client import any_node_answers, patiently
from collection_manager.storage.store import RedisStore

T = TypeVar("T")

TIMEOUT_SETTING = "CM_HTTP_REQUEST_TIMEOUT_S"


@dataclasses.dataclass(frozen=True)
class Sources:
    """Where answers come from: one Redis client (its connection pool shared by every
    request), Kafka (``status``'s lag; None: not configured), the consumer's topic and
    the replicas' namespace that ``status`` and ``replicas`` show by default, and the
    record of the local services (which tells a local broker that stopped)."""

    client: redis.Redis
    redis_url: str
    kafka_bootstrap: str | None
    topic: str
    namespace: str
    services_file: Path | None = None

    def store(self) -> RedisStore:
        """A store for one request: it caches no definition past it, so a collection
        dropped and created again (maybe with other buckets) is read as it is now."""
        return RedisStore(self.client)

    def answers(self) -> bool:
        """Whether any node of the Redis answers at all."""
        return any_node_answers(self.redis_url)


@dataclasses.dataclass
class Call:
    """One request's reading: its sources, the server's settings, its deadline, and the
    server's stop (streams end when it is set)."""

    sources: Sources
    config: HttpConfig
    deadline: Deadline
    stopping: threading.Event = dataclasses.field(default_factory=threading.Event)

    def read(self, read: Callable[[], T]) -> T:
        """``read()`` within the request's deadline; through a Redis failover it is tried
        again until then, as ``query`` does (a Redis that does not answer at all fails at
        once)."""
        sources = self.sources
        return self.deadline.run(
            lambda: patiently(read, self.deadline.left(), answers=sources.answers)
        )
