"""One log line when a run of failures begins and one when it ends, whatever its length.

A long-running process retries what failed (Kafka or Redis away) every few hundred
milliseconds; logging each failure would stream lines for as long as the outage lasts.
The failures in between are logged at INFO, for ``-v``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable


class OutageLog:
    """The log lines of one kind of attempt that fails while a service is away.

    Args:
        logger: where the lines go.
        what: the attempt, as a line begins with it ("lease check", "Kafka at HOST").
        clock: monotonic seconds, for how long an outage lasted.
        settle_s: how long after the latest failure a success ends the outage (a broker
            going down acknowledges what it still had in flight between its refusals).
    """

    def __init__(
        self,
        logger: logging.Logger,
        what: str,
        clock: Callable[[], float] = time.monotonic,
        settle_s: float = 0.0,
    ) -> None:
        self._logger = logger
        self._what = what
        self._clock = clock
        self._settle_s = settle_s
        self._last_failure = 0.0
        self._lock = threading.Lock()
        self._since: float | None = None
        self._failures = 0
        self._warned = False

    @property
    def ongoing(self) -> bool:
        """Whether the latest attempt failed."""
        return self._since is not None

    def failed(self, cause: object, alarming: bool = True) -> None:
        """Records a failure: a WARNING if it begins an outage, else INFO. One that is not
        ``alarming`` (a topic not created yet at a first start) begins at INFO; the first
        alarming failure of the same outage is then its WARNING."""
        with self._lock:
            self._failures += 1
            self._last_failure = self._clock()
            first = self._since is None
            if first:
                self._since = self._last_failure
            if alarming and not self._warned:
                self._warned = True
                self._logger.warning("%s failed: %s; retrying until it works", self._what, cause)
            elif first:
                self._logger.info("%s failed: %s; retrying until it works", self._what, cause)
            else:
                self._logger.info("%s failed again (%d): %s", self._what, self._failures, cause)

    def succeeded(self) -> None:
        """Records a success: ends the outage, if one goes on, in one line."""
        if self._since is None:  # the usual case, without the lock
            return
        with self._lock:
            now = self._clock()
            if self._since is None or now - self._last_failure < self._settle_s:
                return
            lasted = now - self._since
            level = logging.WARNING if self._warned else logging.INFO
            self._logger.log(
                level, "%s works again after %.1f s and %d failures", self._what, lasted,
                self._failures,
            )  # fmt: skip
            self._since, self._failures, self._warned = None, 0, False
