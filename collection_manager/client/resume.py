"""Where a change feed stands, and when it tries again (pure: no I/O, no clock).

A *position* is what an answer's ``as_of`` and a change event's ``id`` give: a time, or of
a bucketed collection a cut (a time per bucket joined by commas, ``12,40,7``; ``0`` is the
start). The server streams every change after the position a request names, and each
event's id is the position its changes reach. So a feed that reconnects with
``Last-Event-ID`` set to the id of the last event it handed on gets every later change
once: none twice (the server starts after the id), none lost (the log keeps them, or the
server refuses with 410, never skipping).

Retries are bounded: at most ``retries`` failures in a row, waiting ``backoff_s``, then
twice that each time, up to ``max_backoff_s`` (or longer when the server's
``Retry-After`` asks). A connection that proves healthy (a changes event, or a keep-alive)
starts the count again; one that only says its position and drops does not, so a server
that cuts every stream at once is given up on.
"""

from __future__ import annotations

import dataclasses
import ssl

from collection_manager.client.errors import (
    BrokenAnswer,
    ClientError,
    ConnectionFailed,
    ServerTimeout,
    ServiceUnavailable,
)

Position = int | str


def position_text(position: Position) -> str:
    """A position as a request and an event id write it."""
    if isinstance(position, bool) or not isinstance(position, int | str):
        raise ClientError(f"a position is a time or a cut (an answer's as_of), not {position!r}")
    text = str(position).strip()
    if not text or not all(part.isascii() and part.isdigit() for part in text.split(",")):
        raise ClientError(
            f"a position is a time (3) or a cut (12,40,7), as an answer's as_of gives it, "
            f"not {position!r}"
        )
    return text


def _times(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split(","))


def reached(position: Position, until: Position) -> bool:
    """Whether ``position`` is at or past ``until``: a time at least ``until``'s, a cut at
    least ``until``'s in every bucket (``0`` stands for the start of any collection).

    Raises:
        ClientError: when the two are not positions of one collection (a time and a cut,
            or cuts of different numbers of buckets).
    """
    at, end = _times(position_text(position)), _times(position_text(until))
    if len(at) != len(end):
        if end == (0,):
            return True
        if at == (0,):
            at = (0,) * len(end)
        else:
            raise ClientError(
                f"until={until} and the feed's position {position} are not positions of "
                "one collection: give a time for an unbucketed one, a cut of its buckets "
                "for a bucketed one"
            )
    return all(a >= e for a, e in zip(at, end, strict=True))


def retriable(exc: BaseException) -> bool:
    """Whether a failure of a feed's connection may pass if it tries again: a dropped or
    silent connection, an answer cut short, a server too busy or its store away (503), a
    read past its time (504). Not: a refusal of the request itself, a certificate that
    does not verify."""
    if isinstance(exc, ConnectionFailed):
        return not isinstance(exc.__cause__, ssl.SSLCertVerificationError)
    return isinstance(exc, BrokenAnswer | ServiceUnavailable | ServerTimeout)


@dataclasses.dataclass
class Resume:
    """The bookkeeping of one feed.

    Attributes:
        position: the id of the last event received (a position event or one handed on);
            None until the first connection said where it starts.
        failures: failures in a row since the last healthy connection.
        reconnects: connections made after the first.
        retry_ms: the delay the server asked for (its ``retry`` field), if it did.
    """

    position: str | None = None
    retries: int = 5
    backoff_s: float = 0.5
    max_backoff_s: float = 30.0
    failures: int = 0
    reconnects: int = 0
    retry_ms: int | None = None

    def headers(self) -> dict[str, str]:
        """What a (re)connection sends: ``Last-Event-ID`` once there is a position."""
        return {} if self.position is None else {"Last-Event-ID": self.position}

    def started(self, position: str) -> None:
        """A connection said where it starts (its position event)."""
        self.position = position

    def delivered(self, position: str) -> None:
        """An event was handed on: the next connection starts after it."""
        self.position = position
        self.failures = 0

    def healthy(self) -> None:
        """The connection proved it streams (a keep-alive came)."""
        self.failures = 0

    def delay(self, retry_after: float | None = None) -> float | None:
        """After a failure: seconds to wait before connecting again, None to give up."""
        self.failures += 1
        if self.failures > self.retries:
            return None
        base = (
            self.backoff_s if self.retry_ms is None else max(self.backoff_s, self.retry_ms / 1000)
        )
        wait = min(self.max_backoff_s, base * 2 ** (self.failures - 1))
        if retry_after is not None:
            wait = max(wait, min(retry_after, self.max_backoff_s))
        self.reconnects += 1
        return wait
