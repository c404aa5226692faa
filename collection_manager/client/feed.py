"""A collection's change feed (``/changes``, Server-Sent Events) as an iterator that
survives a dropped connection.

Each item is one ``changes`` event: the changes of one or more whole times (of a bucketed
collection, those between two cuts) and the position they reach. When the connection
drops, breaks off mid-event or goes silent past ``idle_timeout`` (the server sends a
keep-alive every ``CM_HTTP_KEEPALIVE_S``, 15 s by default), the feed connects again with
``Last-Event-ID`` set to the last position it handed on, after the waits ``resume.py``
bounds; so every change comes once, also across reconnections. An ``error`` event (the
collection was dropped, the log trimmed past the position) ends the feed with its
problem, as does a refusal of the request; giving up after the retries raises
:class:`ConnectionFailed` naming the position reached, from which ``since=`` goes on.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from collections.abc import Callable, Generator, Iterator
from types import TracebackType
from typing import Any

from collection_manager.client import problems
from collection_manager.client.errors import BrokenAnswer, ClientError, ConnectionFailed
from collection_manager.client.resume import Position, Resume, position_text, reached, retriable
from collection_manager.client.sse import Event, EventParser, LineSplitter, StreamError
from collection_manager.client.transport import Answer, Transport
from collection_manager.client.urls import collection_path, target
from collection_manager.core.specs import Value

logger = logging.getLogger(__name__)

EVENT_STREAM = "text/event-stream"
# Bytes one read of the stream takes at most; an event is handed on once it is whole.
_CHUNK = 64 * 1024


@dataclasses.dataclass(frozen=True)
class Change:
    """One change: the row, its ``diff`` (+n added, -n retracted) at ``time``; of a
    bucketed collection, ``bucket`` is the bucket and ``time`` the bucket's own."""

    time: int
    row: dict[str, Value]
    diff: int
    bucket: int | None = None


@dataclasses.dataclass(frozen=True)
class Changes:
    """The changes of one event and the position they reach (``as_of``, as the rows'
    ``as_of`` reads it; ``position`` is the same as text: what ``since=`` takes)."""

    as_of: int | str
    position: str
    changes: tuple[Change, ...]


def parse_changes(event: Event, url: str) -> Changes:
    """A ``changes`` event's data.

    Raises:
        BrokenAnswer: when it is not what the server sends.
    """
    try:
        data = json.loads(event.data)
        changes = tuple(
            Change(int(c["time"]), dict(c["row"]), int(c["diff"]), c.get("bucket"))
            for c in data["changes"]
        )
        as_of = data["as_of"]
    except (ValueError, KeyError, TypeError) as exc:
        raise BrokenAnswer(url, f"a changes event that does not parse ({exc!r})") from None
    if event.id is None:
        raise BrokenAnswer(url, "a changes event without an id")
    return Changes(as_of, event.id, changes)


class ChangeFeed:
    """The changes of one collection after a position, as they come; iterate it.

    Made by :meth:`Client.changes`, which documents the arguments. Not safe to share
    between threads; :meth:`close` (or leaving a ``with`` block) ends it.

    Attributes:
        resume: the bookkeeping: ``position`` (the last one handed on, or where the feed
            started), ``reconnects``.
    """

    def __init__(
        self,
        transport: Transport,
        name: str,
        since: Position | None,
        until: Position | None,
        resume: Resume,
        idle_timeout: float,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self._transport, self._name, self._idle_timeout = transport, name, idle_timeout
        self._until = None if until is None else position_text(until)
        query = [] if since is None else [("since", position_text(since))]
        self._target = target(transport.base, collection_path(name, "/changes"), query)
        self.url = transport.base.shown(self._target)
        self.resume, self._sleep = resume, sleep
        self._answer: Answer | None = None
        self._events = self._follow()

    @property
    def position(self) -> str | None:
        """Where the feed stands: every change up to it was handed on (None: not started)."""
        return self.resume.position

    def __iter__(self) -> ChangeFeed:
        return self

    def __next__(self) -> Changes:
        return next(self._events)

    def __enter__(self) -> ChangeFeed:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Ends the feed and its connection."""
        self._events.close()
        self._drop()

    def _drop(self) -> None:
        if self._answer is not None:
            self._answer.close()
            self._answer = None

    def _done(self) -> bool:
        position = self.resume.position
        return self._until is not None and position is not None and reached(position, self._until)

    def _follow(self) -> Generator[Changes, None, None]:
        while not self._done():
            try:
                self._answer = self._transport.get(
                    self._target,
                    EVENT_STREAM,
                    self.resume.headers(),
                    timeout=self._idle_timeout,
                    collection=self._name,
                )
                yield from self._read(self._answer)
                if self._done():
                    return
                lost: ClientError = ConnectionFailed(self.url, "the server ended the stream")
            except ClientError as exc:
                if not retriable(exc):
                    raise
                lost = exc
            finally:
                self._drop()
            self._wait(lost)

    def _read(self, answer: Answer) -> Iterator[Changes]:
        splitter, parser = LineSplitter(), EventParser()
        comments = 0
        while chunk := answer.read1(_CHUNK):
            try:
                events = parser.feed(splitter.feed(chunk))
            except StreamError as exc:
                raise BrokenAnswer(self.url, str(exc), collection=self._name) from None
            self.resume.retry_ms = parser.retry_ms or self.resume.retry_ms
            if parser.comments > comments:
                comments = parser.comments
                self.resume.healthy()
            for event in events:
                found = self._handle(event)
                if found is not None:
                    self.resume.delivered(found.position)
                    yield found
                if self._done():
                    return

    def _handle(self, event: Event) -> Changes | None:
        if event.kind == "position" and event.id is not None:
            self.resume.started(event.id)
            return None
        if event.kind == "changes":
            return parse_changes(event, self.url)
        if event.kind == "error":
            raise problems.from_document(_document(event), 500, self.url, collection=self._name)
        return None  # a kind of event this client does not know yet

    def _wait(self, lost: ClientError) -> None:
        delay = self.resume.delay(getattr(lost, "retry_after", None))
        where = self.resume.position
        if delay is None:
            raise ConnectionFailed(
                self.url,
                f"gave up after {self.resume.retries} reconnections ({lost}); every change "
                f"through position {where} was handed on: since={where} goes on from there",
                collection=self._name,
            ) from lost
        logger.info("change feed of %s reconnects in %.1f s: %s", self._name, delay, lost)
        self._sleep(delay)


def _document(event: Event) -> dict[str, Any]:
    try:
        document = json.loads(event.data)
    except ValueError:
        document = None
    return document if isinstance(document, dict) else {"detail": event.data[:200]}
