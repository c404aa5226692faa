"""The consumer's claim on its topic: one consumer per topic and Redis, enforced.

The claim is the consumer's alive key (``heartbeats.py``), ``cm:alive:consumer:<topic>``,
holding who claimed it: a token of its own, the host, the pid namespace, the pid and its
start time, and since when. One small script on that one key (so a Redis Cluster serves it
too) claims it when it is free, takes it over from a holder that is stale, and renews it
only while it holds our value or a stale holder's (a failover that lost the tail puts the
predecessor's back): a compare-and-set, so two consumers never both hold it.

A holder is stale when its key expired (Redis's clock judges, a few missed beats after
the last), or when it was claimed on this very host and pid namespace by a process that no
longer runs (a SIGKILLed consumer is taken over at once, without waiting for the expiry).
The host name alone is not enough: a container on the host network shares it, and its
pids are not the host's. :func:`is_stale` is that rule, on plain values.
"""

from __future__ import annotations

import dataclasses
import datetime
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable
from typing import cast

import redis

from collection_manager.config.services import start_time
from collection_manager.core.errors import utc
from collection_manager.storage.client import as_text
from collection_manager.storage.errors import StorageError
from collection_manager.storage.heartbeats import ALIVE_EXPIRY_S, CONSUMER, alive_key

logger = logging.getLogger(__name__)

# Sets KEYS[1] to ARGV[1] for ARGV[2] seconds when it is missing, holds ARGV[1] already (a
# renewal) or holds ARGV[3] (the stale holder the caller judged); else returns what it
# holds, and writes nothing.
_CLAIM = """
local current = redis.call('GET', KEYS[1])
if current == false or current == ARGV[1] or current == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'EX', tonumber(ARGV[2]))
  return false
end
return current
"""

# Deletes KEYS[1] only while it holds ARGV[1]: a consumer that lost its claim removes
# nothing of the one that took it over.
_RELEASE = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


@dataclasses.dataclass(frozen=True)
class Holder:
    """Who holds a claim, as its key records it.

    Attributes:
        host: the host name where it runs ("" when an older version wrote only a pid).
        pid: its process id.
        since_ms: when it claimed (ms since the Unix epoch; None when unknown).
        pid_ns: its pid namespace (the inode of ``/proc/self/ns/pid``), where known.
        pid_start: its start time in clock ticks since boot (``/proc/PID/stat``), so that
            a pid the kernel handed out again names another process.
        token: unique per claim, so two claims by one process are told apart.
    """

    host: str
    pid: int
    since_ms: int | None = None
    pid_ns: int | None = None
    pid_start: int | None = None
    token: str = ""

    def encode(self) -> str:
        """The key's value: compact JSON, compared byte for byte by the scripts."""
        return json.dumps(dataclasses.asdict(self), separators=(",", ":"), sort_keys=True)

    @classmethod
    def decode(cls, raw: bytes | str) -> Holder:
        """The holder a key's value names; one of an older version (a bare pid) too."""
        text = as_text(raw)
        try:
            fields = json.loads(text)
            if isinstance(fields, dict):
                known = {f.name for f in dataclasses.fields(cls)}
                return cls(**{k: v for k, v in fields.items() if k in known})
            return cls(host="", pid=int(fields))
        except (TypeError, ValueError):
            return cls(host="", pid=0)

    def describe(self) -> str:
        """``host h, pid 123, since 2026-12-01 22:31:05 UTC``, as far as it is known."""
        parts = [f"host {self.host}"] if self.host else []
        parts.append(f"pid {self.pid}")
        if self.since_ms is not None:
            parts.append(f"since {utc(self.since_ms)}")
        return ", ".join(parts)


@dataclasses.dataclass(frozen=True)
class LocalFacts:
    """What this process can tell of a holder on its own host.

    Attributes:
        host: this host's name.
        pid_ns: this process' pid namespace (None where ``/proc`` does not say).
        start_time: a pid's start time, or None when no such process runs here.
    """

    host: str
    pid_ns: int | None
    start_time: Callable[[int], int | None]

    @classmethod
    def here(cls) -> LocalFacts:
        """The facts of this process."""
        return cls(socket.gethostname(), pid_namespace(), start_time)


def is_stale(holder: Holder | None, local: LocalFacts) -> bool:
    """Whether a claim may be taken: nobody holds it (its key expired, or never was), or
    its holder claimed it in this host's pid namespace and that process no longer runs.

    Args:
        holder: who holds the claim; None when its key does not exist.
        local: this process' host, pid namespace and view of its pids.
    """
    if holder is None:
        return True
    if not holder.host or holder.host != local.host:
        return False  # another host's pids say nothing here
    if holder.pid_ns is None or holder.pid_ns != local.pid_ns:
        return False  # another container on this host (or unknown): its pids are not ours
    started = local.start_time(holder.pid)
    if started is None:
        return True
    return holder.pid_start is not None and started != holder.pid_start


class ClaimHeldError(StorageError):
    """Another consumer of the topic holds the claim: this one refuses to start."""

    def __init__(self, topic: str, holder: Holder, expiry_s: int) -> None:
        super().__init__(
            f"a consumer of topic {topic} already runs on this Redis ({holder.describe()}); "
            f"stop it first, or wait until its record expires ({expiry_s} s after its last "
            "beat)"
        )
        self.holder = holder


class ClaimLostError(StorageError):
    """Another consumer took the claim over while this one was paused or cut off."""

    def __init__(self, topic: str, holder: Holder, expiry_s: int) -> None:
        super().__init__(
            f"another consumer of topic {topic} took over on this Redis ({holder.describe()}) "
            f"while this one was silent past its record's expiry ({expiry_s} s); this one "
            "stops"
        )
        self.holder = holder


class ConsumerClaim:
    """This process' claim on the consumer of ``topic``.

    Args:
        topic: the request topic.
        expiry_s: how long the claim outlives its last renewal.
        local: this process' facts; default those of this process.
    """

    def __init__(
        self, topic: str, expiry_s: int = ALIVE_EXPIRY_S, local: LocalFacts | None = None
    ) -> None:
        self.topic, self.expiry_s = topic, expiry_s
        self.key = alive_key(CONSUMER, topic)
        self._local = local or LocalFacts.here()
        pid = os.getpid()
        self.mine = Holder(
            host=self._local.host,
            pid=pid,
            since_ms=now_ms(),
            pid_ns=self._local.pid_ns,
            pid_start=self._local.start_time(pid),
            token=uuid.uuid4().hex,
        )
        self._value = self.mine.encode()

    def acquire(self, client: redis.Redis) -> Holder | None:
        """Claims the topic; returns the stale holder it took over from, if any.

        Raises:
            ClaimHeldError: when a holder that is not stale has it.
        """
        stale = ""
        for _ in range(3):  # a holder that changed between two looks is judged again
            current = self._set(client, stale)
            if current is None:
                return Holder.decode(stale) if stale else None
            holder = Holder.decode(current)
            if not is_stale(holder, self._local):
                raise ClaimHeldError(self.topic, holder, self.expiry_s)
            stale = as_text(current)
        raise ClaimHeldError(self.topic, Holder.decode(stale), self.expiry_s)

    def renew(self, client: redis.Redis) -> Holder | None:
        """Renews the claim while it is ours, free again or held by a stale holder; else
        returns who holds it.

        A stale holder stands in our place after a Redis failover that lost the tail: the
        promoted replica has the claim of the consumer this one took over from, not the
        taking over. Taking it back is as safe as the first time: that holder is gone.
        """
        try:
            stale = self.acquire(client)
        except ClaimHeldError as held:
            return held.holder
        if stale is not None:
            logger.warning(
                "the claim on topic %s was held again by a consumer that no longer runs "
                "(%s; a Redis failover lost this one's claim?): taken back",
                self.topic,
                stale.describe(),
            )
        return None

    def release(self, client: redis.Redis) -> None:
        """Gives the claim up, if it is still ours: a clean stop shows at once."""
        client.eval(_RELEASE, 1, self.key, self._value)

    def _set(self, client: redis.Redis, stale: str) -> bytes | str | None:
        current = client.eval(_CLAIM, 1, self.key, self._value, self.expiry_s, stale)
        return cast("bytes | str | None", current)


def pid_namespace() -> int | None:
    """This process' pid namespace: the inode of ``/proc/self/ns/pid``."""
    try:
        return os.stat("/proc/self/ns/pid").st_ino
    except OSError:
        return None


def now_ms() -> int:
    """Wall clock in ms since the Unix epoch."""
    return int(datetime.datetime.now(tz=datetime.UTC).timestamp() * 1000)
