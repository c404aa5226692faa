"""The bounds of ``serve``: how many answers at once, and how long one may read.

A request takes a slot of its kind (a change stream, or any other answer) or is refused at
once with 503 naming the bound: waiting in a queue would only make every client late. A
read runs in a thread of its own, so that the request can answer 504 when its time is up;
Python cannot stop a thread, so the read then ends on its own (each of its Redis calls is
bounded) and gives the slot back only then: the bound counts the work that runs, not the
requests that are still waited for.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from collection_manager.http.problems import Problem

T = TypeVar("T")


class Slots:
    """At most ``bound`` of one kind of work at once.

    Args:
        bound: the most at once.
        kind: the problem kind of a refusal (``too-many-requests``, ``too-many-streams``).
        setting: the setting that sets the bound, named in the refusal.
    """

    def __init__(self, bound: int, kind: str, setting: str) -> None:
        self.bound, self.kind, self.setting = bound, kind, setting
        self._lock = threading.Lock()
        self._taken = 0

    @property
    def taken(self) -> int:
        return self._taken

    def take(self) -> Ticket:
        """A ticket holding one slot.

        Raises:
            Problem: 503, naming the bound, when every slot is taken.
        """
        with self._lock:
            if self._taken >= self.bound:
                raise Problem(
                    self.kind,
                    f"{self._taken} answers of this kind are running, the most at once "
                    f"({self.setting}={self.bound}); try again shortly",
                    bound=self.bound,
                    headers={"Retry-After": "1"},
                )
            self._taken += 1
        return Ticket(self)

    def _give_back(self) -> None:
        with self._lock:
            self._taken -= 1


class Ticket:
    """One request's slot, given back once whoever holds it last lets go: the request,
    or a read it left running past its deadline."""

    def __init__(self, slots: Slots) -> None:
        self._slots = slots
        self._lock = threading.Lock()
        self._holders = 1

    def hold(self) -> None:
        """One more holder (a read thread) until its :meth:`release`."""
        with self._lock:
            self._holders += 1

    def release(self) -> None:
        """One holder lets go; the last one gives the slot back."""
        with self._lock:
            self._holders -= 1
            last = self._holders == 0
        if last:
            self._slots._give_back()


class Deadline:
    """The time a request may spend reading: ``timeout_s`` from its arrival.

    Args:
        timeout_s: the bound.
        setting: the setting that sets it, named in the refusal.
        ticket: the request's slot, held by each read until it ends.
    """

    def __init__(self, timeout_s: float, setting: str, ticket: Ticket | None = None) -> None:
        self.timeout_s, self.setting, self.ticket = timeout_s, setting, ticket
        self._ends = time.monotonic() + timeout_s

    def left(self) -> float:
        """Seconds left (0 once past)."""
        return max(0.0, self._ends - time.monotonic())

    def run(self, read: Callable[[], T]) -> T:
        """``read()`` in a thread of its own, if it ends in the time left.

        Raises:
            Problem: 504, naming the bound, when it did not; whatever ``read`` raised.
        """
        outcome: list[T] = []
        failure: list[BaseException] = []
        done = threading.Event()
        ticket = self.ticket

        def work() -> None:
            try:
                outcome.append(read())
            except BaseException as exc:  # handed to the request thread, which answers it
                failure.append(exc)
            finally:
                done.set()
                if ticket is not None:
                    ticket.release()

        if ticket is not None:
            ticket.hold()
        threading.Thread(target=work, name="http-read", daemon=True).start()
        if not done.wait(self.left()):
            raise Problem(
                "timeout",
                f"the read took longer than {self.setting}={self.timeout_s:g} s; narrow it "
                "(where, limit) or try again",
                bound=self.timeout_s,
            )
        if failure:
            raise failure[0]
        return outcome[0]
