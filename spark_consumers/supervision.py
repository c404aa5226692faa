"""Faults are weather: the consumer waits out an outage of Redis or Kafka and resumes.

An *outage* lasts from the first failure to the next success. It is logged once when it
begins (with its cause) and once when it ends (with how long it lasted and how many retries
it took), and kept in Redis for ``status`` whenever Redis answers. Between retries the
consumer waits with capped exponential backoff and full jitter, so many consumers that
lost one service do not all come back at the same instant.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from collection_manager.config import redact_url
from collection_manager.storage.client import REDIS_FAULTS, redis_client
from collection_manager.storage.consumer_status import ConsumerStatusRecord
from spark_consumers.errors import fault_text

logger = logging.getLogger(__name__)

T = TypeVar("T")

FIRST_DELAY_S = 0.5
MAX_DELAY_S = 30.0


def backoff_s(retries: int, rng: random.Random) -> float:
    """The wait before retry number ``retries`` (1, 2, ...): capped, exponential, jittered."""
    ceiling = min(MAX_DELAY_S, FIRST_DELAY_S * 2 ** min(retries - 1, 16))
    return rng.uniform(ceiling / 2, ceiling)


class Outage:
    """The state of the consumer's services, as the consumer met them.

    Args:
        redis_url: where to keep the state for ``status`` (best effort: Redis may be the
            service that is down).
        topic: the consumer's topic, whose record it is.
        clock: wall-clock milliseconds, for ``since`` in ``status``.
        report: told of each failure (True) and of the end of an outage (False), for the
            consumer's metrics.
    """

    def __init__(
        self,
        redis_url: str,
        topic: str = "",
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        report: Callable[[bool], None] = lambda _ongoing: None,
    ) -> None:
        self._redis_url = redis_url
        self._report = report
        self._topic = topic
        self._clock = clock
        self._rng = rng or random.Random()
        self.retries = 0
        self.since: float | None = None
        self.ended_at: float | None = None  # when the latest outage ended
        self.cause = ""
        # The query's supervision and the broker probe (broker_probe.py) both report.
        self._lock = threading.Lock()

    @property
    def ongoing(self) -> bool:
        """Whether the last attempt failed."""
        return self.since is not None

    def ended_ms(self) -> int | None:
        """When the latest outage ended (now while one goes on); None if there was none."""
        with self._lock:
            if self.since is not None:
                return int(self._clock() * 1000)
            return None if self.ended_at is None else int(self.ended_at * 1000)

    def failed(self, cause: str) -> float:
        """Records a failure; returns how long to wait before the next attempt."""
        cause = " ".join(redact_url(word) for word in cause.split())[:500]
        with self._lock:
            return self._failed(cause)

    def _failed(self, cause: str) -> float:
        self.retries += 1
        if self.since is None:
            self.since = self._clock()
            logger.warning("outage: %s; retrying until it ends", cause)
        elif cause != self.cause:
            logger.info("outage goes on (retry %d): %s", self.retries, cause)
        self.cause = cause
        self._report(True)
        self._record("retrying")
        return backoff_s(self.retries, self._rng)

    def recovered(self, only_if: str = "", unless: str = "") -> None:
        """Records a success: ends the outage, if one is going on whose cause starts with
        ``only_if`` (so that Kafka answering again does not end an outage of Redis) and,
        when ``unless`` is given, not with ``unless``."""
        with self._lock:
            cause = self.cause
            ends = cause.startswith(only_if) and not (unless and cause.startswith(unless))
            if self.since is not None and ends:
                lasted = self._clock() - self.since
                logger.warning("outage over after %.1f s and %d retries", lasted, self.retries)
                self.since, self.retries, self.cause = None, 0, ""
                self.ended_at = self._clock()
                self._report(False)
                self._record("running")

    def _record(self, state: str) -> None:
        fields: dict[str, Any] = {
            "state": state,
            "retries": self.retries,
            "since_ms": int((self.since or self._clock()) * 1000),
            "cause": self.cause,
        }
        try:
            client = redis_client(self._redis_url, socket_connect_timeout=1, socket_timeout=1)
        except REDIS_FAULTS:
            return  # Redis is down too: the log line is the record.
        try:
            ConsumerStatusRecord(client, self._topic).record_health(fields)
        except REDIS_FAULTS:
            pass
        finally:
            client.close()


def until_done(
    attempt: Callable[[], T],
    outage: Outage,
    stop: threading.Event,
    faults: tuple[type[BaseException], ...],
) -> T | None:
    """``attempt()`` once it succeeds, retrying through ``faults``; None when stopped first."""
    while not stop.is_set():
        try:
            result = attempt()
        except faults as exc:
            stop.wait(outage.failed(fault_text(exc)))
            continue
        outage.recovered()
        return result
    return None
