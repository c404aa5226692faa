"""Heartbeats of the long-running processes (the consumer, the controller) in Redis.

A process that is SIGKILLed writes nothing more, so a state it wrote ("running") would stay
forever. Instead each process beats every few seconds from a thread of its own:

- ``cm:alive:<kind>:<name>``, set with an expiry: the process is alive while the key
  exists. Redis's clock judges the expiry, so a skewed clock where ``status`` runs cannot.
- ``cm:beat:<kind>:<name>``, without an expiry: the last beat (when, which pid on which
  host, and what the process adds), so ``status`` says since when a process is silent.

One pair per consumer topic or controller namespace, never per replica: bounded. The
consumer's alive key is its claim on the topic too (``claims.py``): its heartbeat renews it
only while it is still the consumer's own.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import redis

from collection_manager.storage.client import REDIS_FAULTS, redis_client
from collection_manager.storage.libraries import in_use_key

if TYPE_CHECKING:
    from collection_manager.storage.claims import ConsumerClaim, Holder

logger = logging.getLogger(__name__)

# A beat every BEAT_INTERVAL_S; the alive key outlives it by a few missed beats, so that
# a busy Redis or a long GC pause does not make a live process look dead.
BEAT_INTERVAL_S = 3.0
ALIVE_EXPIRY_S = 15

CONSUMER = "consumer"
CONTROLLER = "controller"
SINK = "sink"


def alive_key(kind: str, name: str) -> str:
    """The expiring key that exists while the ``kind`` process of ``name`` beats."""
    return f"cm:alive:{kind}:{name}"


def beat_key(kind: str, name: str) -> str:
    """The key of the last beat of the ``kind`` process of ``name`` (no expiry)."""
    return f"cm:beat:{kind}:{name}"


@dataclasses.dataclass(frozen=True)
class Liveness:
    """What Redis holds of a process: whether it beats, and its last beat's record
    (``at_ms``, ``pid``, ``host``, ``started_ms`` and the process' own fields), if any."""

    alive: bool
    last: dict[str, Any] | None

    @property
    def state(self) -> str:
        """``running``, ``stopped`` (it beat once, no more), or ``unknown`` (never beat)."""
        if self.alive:
            return "running"
        return "stopped" if self.last else "unknown"


def read_liveness(client: redis.Redis, kind: str, name: str) -> Liveness:
    """The liveness of the ``kind`` process of ``name``, from one round trip."""
    with client.pipeline(transaction=False) as pipe:
        pipe.exists(alive_key(kind, name))
        pipe.get(beat_key(kind, name))
        exists, raw = pipe.execute()
    try:
        last = json.loads(raw) if raw else None
    except ValueError:  # written by another version
        last = None
    return Liveness(bool(exists), last if isinstance(last, dict) else None)


class Heartbeat:
    """Beats for one process from a daemon thread until :meth:`stop`.

    A beat that fails (Redis away) is skipped: the process goes on, and ``status`` shows it
    stopped once the alive key expired, which is true as far as anybody can tell.

    Args:
        redis_url: the Redis of the pipeline.
        kind: ``consumer``, ``controller`` or ``sink``.
        name: the consumer's topic, the controller's namespace or the sink's name.
        detail: the process' own fields of each beat (e.g. the controller's last tick).
        library: the store library the process calls while it runs (the consumer's), which
            each beat marks in use (``libraries.py``), so that no one removes it.
        claim: the consumer's claim (``claims.py``), renewed instead of setting the alive
            key; once another process holds it, the beats end and ``lost`` is called with
            that holder.
    """

    def __init__(
        self,
        redis_url: str,
        kind: str,
        name: str,
        detail: Callable[[], dict[str, Any]] = dict,
        interval_s: float = BEAT_INTERVAL_S,
        expiry_s: int = ALIVE_EXPIRY_S,
        library: str | None = None,
        claim: ConsumerClaim | None = None,
        lost: Callable[[Holder], None] = lambda _holder: None,
    ) -> None:
        self._url, self._kind, self._name = redis_url, kind, name
        self._library = library
        self._claim, self._lost = claim, lost
        self._detail, self._interval_s, self._expiry_s = detail, interval_s, expiry_s
        self._identity = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "started_ms": int(time.time() * 1000),
        }
        self._client: redis.Redis | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"{kind}-heartbeat", daemon=True)

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Ends the beats and removes the alive key: a clean stop shows at once."""
        self._stop.set()
        self._thread.join(timeout=10)
        if self._claim is not None:
            self._write(self._claim.release)
        else:
            self._write(lambda client: client.delete(alive_key(self._kind, self._name)))
        if self._client is not None:
            self._client.close()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._write(self._beat)
            self._stop.wait(self._interval_s)

    def _beat(self, client: redis.Redis) -> None:
        record = {**self._identity, **self._detail(), "at_ms": int(time.time() * 1000)}
        if self._claim is not None and (holder := self._claim.renew(client)) is not None:
            # Another holds it: its beats are the record now, this process goes.
            self._stop.set()
            self._lost(holder)
            return
        # The record first: a reader that finds the process alive finds its record too
        # (a claim renewed above is in place from before, since its first acquiring).
        with client.pipeline(transaction=False) as pipe:
            pipe.set(beat_key(self._kind, self._name), json.dumps(record))
            if self._claim is None:
                pipe.set(alive_key(self._kind, self._name), record["pid"], ex=self._expiry_s)
            if self._library is not None:
                user = f"{self._kind}:{self._name}"
                pipe.set(in_use_key(self._library), user, ex=self._expiry_s)
            pipe.execute()

    def _write(self, write: Callable[[redis.Redis], object]) -> bool:
        try:
            if self._client is None:
                self._client = redis_client(self._url, socket_connect_timeout=2, socket_timeout=2)
            write(self._client)
            return True
        except REDIS_FAULTS as exc:
            logger.debug("heartbeat of the %s %s failed: %s", self._kind, self._name, exc)
            if self._client is not None:
                self._client.close()
            self._client = None  # a new one next time: Redis may be another server now
            return False
