"""A separate Redis client probing one command at a fixed pace, on its own connection.

``Prober`` sends its command every ``interval_s`` in a thread of its own and times each
probe from the moment it was *due*, not from when it was sent: a probe that had to wait
behind a blocked one counts its wait. Timing from the send alone would hide a stall (the
"coordinated omission" of closed-loop load generators): while Redis is blocked for 3 s,
only one probe would be in flight and the 600 that were due meanwhile would never exist.

A ``BUSY`` reply (Redis answers every client so once a script has run longer than its
``busy-reply-threshold``, 5 s by default) is no answer: the probe is sent again until it
gets one, and the busy replies are counted.
"""

from __future__ import annotations

import dataclasses
import math
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

Command = Callable[[redis.Redis], object]


@dataclasses.dataclass(frozen=True)
class Probe:
    """One probe: when it was due, how long until it was answered, and its busy replies."""

    due: float  # time.perf_counter() seconds
    latency_ms: float  # from ``due`` to the answer
    round_trip_ms: float  # from the last send to the answer
    busy_replies: int


class Prober:
    """Sends ``command`` every ``interval_s`` on a connection of its own, in its own thread."""

    def __init__(self, url: str, command: Command, interval_s: float) -> None:
        # A connection of its own: the probes never queue behind another client's calls
        # on a shared connection, only behind what Redis itself is busy with.
        # No timeout and no retry: a probe waits for its answer however long Redis is
        # blocked (bench all's timeout stops a benchmark that hangs).
        self._client = redis.Redis.from_url(url, socket_timeout=None, retry=Retry(NoBackoff(), 0))
        self._client.ping()
        self._command, self._interval_s = command, interval_s
        self._stop = threading.Event()
        self._stop_at = math.inf  # no probe due at or after it is sent
        self._probes: list[Probe] = []
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self) -> Prober:
        self._thread.start()
        return self

    def stop(self, at: float | None = None) -> list[Probe]:
        """Sends what fell due before ``at`` (default now), then stops; returns every probe.

        Probers stopped one after the other are given one ``at``, so that the catch-up of
        one does not lengthen the phase of the next.

        Raises:
            Exception: what failed a probe (anything but a busy reply), in the caller's thread.
        """
        self._stop_at = time.perf_counter() if at is None else at
        self._stop.set()
        self._thread.join()
        self._client.close()
        if self._error is not None:
            raise self._error
        # This thread may have gone on probing while another prober was being stopped.
        return [probe for probe in self._probes if probe.due < self._stop_at]

    def _run(self) -> None:
        try:
            self._loop()
        except Exception as exc:  # re-raised by stop(): a thread's own exception is lost
            self._error = exc

    def _loop(self) -> None:
        due = time.perf_counter()
        while True:
            pause = due - time.perf_counter()
            if pause > 0 and self._stop.wait(pause):
                return  # stopped before this probe was due
            if due >= self._stop_at:
                return
            # Probes that fell due while one was blocked are sent now, back to back: each
            # counts its wait, and a stop right after a stall does not lose them.
            self._probes.append(self._probe(due))
            due += self._interval_s

    def _probe(self, due: float) -> Probe:
        busy = 0
        while True:
            sent = time.perf_counter()
            try:
                self._command(self._client)
            except redis.ResponseError as exc:
                if not str(exc).startswith("BUSY"):
                    raise
                busy += 1
                time.sleep(self._interval_s)
                continue
            done = time.perf_counter()
            return Probe(due, (done - due) * 1e3, (done - sent) * 1e3, busy)


def percentile(values: Sequence[float], q: float) -> float:
    """The nearest-rank ``q``-th percentile (0 < q <= 100); NaN for no values."""
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q / 100 * len(ordered)) - 1)]


def summary(probes: Sequence[Probe]) -> dict[str, Any]:
    """p50, p99 and max latency (from due), the worst round trip, and the busy replies."""
    latencies = [p.latency_ms for p in probes]
    return {
        "probes": len(probes),
        "p50_ms": percentile(latencies, 50),
        "p99_ms": percentile(latencies, 99),
        "max_ms": max(latencies, default=math.nan),
        "max_round_trip_ms": max((p.round_trip_ms for p in probes), default=math.nan),
        "busy_replies": sum(p.busy_replies for p in probes),
    }
