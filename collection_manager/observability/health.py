"""Liveness and readiness of one process, as ``/healthz`` and ``/readyz`` answer them.

*Live*: each of the process' loops went round recently (a hung loop is a dead process, to
an orchestrator that restarts it). *Ready*: the process does its job now, as its own checks
say (the consumer: no outage and a recent batch; the controller: a recent lease check;
an agent: an active epoch). A check returns why the process is not ready, or None.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

ReadyCheck = Callable[[], str | None]


def recent(what: str, last_ms: Callable[[], int | None], bound_s: float) -> ReadyCheck:
    """A check that ``last_ms()`` (wall-clock ms; None: not yet) is at most ``bound_s`` old."""

    def check() -> str | None:
        last = last_ms()
        if last is None:
            return f"no {what} yet"
        age_s = time.time() - last / 1000
        return (
            None if age_s <= bound_s else f"last {what} {age_s:.0f} s ago (bound {bound_s:.0f} s)"
        )

    return check


class Health:
    """The loops a process beats, and the checks of its readiness.

    Args:
        clock: monotonic seconds.
    """

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._loops: dict[str, tuple[float, float]] = {}  # name -> (last beat, max age)
        self._checks: dict[str, ReadyCheck] = {}

    def watch_loop(self, name: str, max_age_s: float) -> None:
        """Starts watching loop ``name``: it is live while it beats every ``max_age_s``."""
        with self._lock:
            self._loops[name] = (self._clock(), max_age_s)

    def beat(self, name: str) -> None:
        """Loop ``name`` went round (nothing, while it is not watched)."""
        with self._lock:
            if name in self._loops:
                self._loops[name] = (self._clock(), self._loops[name][1])

    def forget_loop(self, name: str) -> None:
        """Loop ``name`` ended on purpose (the process is stopping)."""
        with self._lock:
            self._loops.pop(name, None)

    def add_check(self, name: str, check: ReadyCheck) -> None:
        """Readiness also needs ``check()`` to return None."""
        self._checks[name] = check

    def liveness(self) -> list[str]:
        """Why the process is not live (loops silent too long); empty when it is."""
        now = self._clock()
        with self._lock:
            loops = dict(self._loops)
        return [
            f"loop {name!r} silent for {now - last:.0f} s (bound {max_age_s:.0f} s)"
            for name, (last, max_age_s) in sorted(loops.items())
            if now - last > max_age_s
        ]

    def readiness(self) -> list[str]:
        """Why the process is not ready (not live, or a check failed); empty when it is."""
        reasons = self.liveness()
        for name, check in sorted(self._checks.items()):
            try:
                reason = check()
            except Exception as exc:  # a check that fails says not ready, never crashes
                reason = f"check failed: {type(exc).__name__}: {exc}"
            if reason is not None:
                reasons.append(f"{name}: {reason}")
        return reasons
