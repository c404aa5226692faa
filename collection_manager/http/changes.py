"""``/api/v1/collections/{name}/changes``: the change feed as Server-Sent Events, with
``tail -f``'s semantics.

The stream starts at a *position*: ``Last-Event-ID`` when a client reconnects, else
``since``, else now. A position is what an answer's ``as_of`` gives: a collection time, or
for a bucketed collection a cut (``12,40,7``). The stream holds every change after it:

- ``event: position`` first, whose ``id`` is the start, so that a client that reconnects
  before any change came goes on from there;
- ``event: changes`` with ``{"as_of", "changes": [...]}``, whose ``id`` is the position its
  changes reach: of an unbucketed collection whole times only (``tail``'s readable times:
  a delete in progress becomes readable with its last step), of a bucketed one the changes
  between two cuts (``tail_buckets``; a group sent to several buckets comes whole, unless a
  catch-up longer than :data:`EVENT_CHANGES` splits it over two events, as ``tail --limit``
  pages do);
- a comment (``: keep-alive``) after ``CM_HTTP_KEEPALIVE_S`` without an event;
- ``event: error`` with a problem document, and the end, when the feed cannot go on: the
  collection was dropped (or created again), or the change log was trimmed past the
  position (410: read the rows again and follow from their ``as_of``).

Reconnecting with the last ``id`` received delivers each change once: none twice, none lost
(positions are exact, and a log trimmed past one is refused, never skipped). Back-pressure
is the socket's: the stream reads Redis for the next event only once the last one was
written, so a slow client holds at most one event in memory; one that reads nothing for
``CM_HTTP_REQUEST_TIMEOUT_S`` is disconnected. A Redis that fails over or stops answering
keeps the stream open (keep-alives go on) until it answers again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator
from typing import Any

from collection_manager.core import json_text
from collection_manager.core.cut import Cut, CutError
from collection_manager.core.errors import InfrastructureError, LogTrimmedError
from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec
from collection_manager.http import metrics
from collection_manager.http.change_positions import (
    Position,
    at_least,
    log_trimmed,
    position_json,
    position_text,
    trimmed_past,
    why_trimmed,
)
from collection_manager.http.context import Call
from collection_manager.http.exchange import Answer, Request
from collection_manager.http.failures import problem_of
from collection_manager.http.negotiation import EVENT_STREAM, choose
from collection_manager.http.params import Query, parse_position
from collection_manager.http.problems import Problem
from collection_manager.reading.rows import as_object
from collection_manager.storage.catalog import raw_record
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.client import REDIS_FAULTS
from collection_manager.storage.step_reads import readable_time

logger = logging.getLogger(__name__)

# How often a stream asks Redis for new changes (tail -f asks every 0.5 s).
POLL_S = 0.2
# Changes one event holds at most (a time, or a bucket's time, is never split: one with
# more comes whole); a catch-up of more is sent as several events.
EVENT_CHANGES = 2_000
# How long a client waits before it reconnects when the stream ends (the SSE retry field).
RETRY_MS = 1_000
# What a poll waits through: Redis away or failing over, a cut read while settles overtake.
_PASSING: tuple[type[Exception], ...] = (*REDIS_FAULTS, InfrastructureError, CutError)


class FeedEnded(Exception):
    """The feed cannot go on: ``problem`` says why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(problem.detail)
        self.problem = problem


def sse_event(kind: str, event_id: str | None, data: Any) -> bytes:
    """One Server-Sent Event; ``data`` as one line of JSON (it holds no newline)."""
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {kind}\ndata: ".encode() + json_text.compact(data) + b"\n\n"


class Feed:
    """The change stream of one collection from ``position``.

    Args:
        call: the request (its sources, settings and the server's stop).
        spec: the collection.
        record: its catalog record when the stream began: when it changes (a drop, a
            creation again), positions mean nothing any more and the stream ends.
        position: the position the stream goes on after.
    """

    def __init__(
        self, call: Call, spec: CollectionSpec, record: bytes | None, position: Position
    ) -> None:
        self._call, self._spec, self._record = call, spec, record
        self.position = position

    def events(self) -> Iterator[bytes]:
        """The stream's bytes: the position, then events as changes come, until the server
        stops or the feed ends (the caller closes it when its client goes away)."""
        metrics.STREAMS_OPEN.inc()
        try:
            yield f"retry: {RETRY_MS}\n\n".encode()
            yield self._position_event()
            yield from self._follow()
        finally:
            metrics.STREAMS_OPEN.dec()

    def _position_event(self) -> bytes:
        text = position_text(self.position)
        return sse_event("position", text, {"as_of": position_json(self.position)})

    def _follow(self) -> Iterator[bytes]:
        stopping, keepalive_s = self._call.stopping, self._call.config.http_keepalive_s
        quiet_since = time.monotonic()
        failing: str | None = None
        while not stopping.is_set():
            sent = False
            try:
                for event in self._poll():
                    yield event
                    sent = True
                if failing is not None:
                    logger.info("change stream of %s goes on: Redis answers", self._spec.name)
                    failing = None
            except FeedEnded as end:
                yield sse_event("error", None, end.problem.document())
                return
            except _PASSING as exc:
                if failing is None:
                    failing = type(exc).__name__
                    logger.warning(
                        "change stream of %s waits: %s (it goes on once Redis answers)",
                        self._spec.name,
                        failing,
                    )
            except Exception as exc:  # anything else ends the stream, as a problem, not a trace
                yield sse_event("error", None, problem_of(exc).document())
                return
            now = time.monotonic()
            if sent:
                quiet_since = now
            elif now - quiet_since >= keepalive_s:
                yield b": keep-alive\n\n"
                quiet_since = now
            stopping.wait(POLL_S)

    def _poll(self) -> Iterator[bytes]:
        """Every event there is now: each read once the one before it was written."""
        client = self._call.sources.client
        if raw_record(client, self._spec.name) != self._record:
            raise FeedEnded(
                Problem(
                    "unknown-collection",
                    f"{self._spec.name} was dropped (or created again) while it was followed: "
                    "its changes end here",
                    parameter="name",
                )
            )
        if isinstance(self.position, int):
            yield from self._poll_times(client)
        else:
            yield from self._poll_cuts()

    def _poll_times(self, client: Any) -> Iterator[bytes]:
        assert isinstance(self.position, int)
        through = readable_time(client, self._spec.name)
        log = ChangeLog(client, self._spec.name)
        while self.position < through:
            try:  # the log's trimming is checked after each read: nothing skipped
                changes, reached = log.times(self.position, through, EVENT_CHANGES)
            except LogTrimmedError as exc:
                raise FeedEnded(
                    log_trimmed(why_trimmed(self._spec, exc), self.position, None)
                ) from None
            self.position = reached
            if changes:
                entries = [
                    {"time": c.time, "row": as_object(self._spec, c.row), "diff": c.diff}
                    for c in changes
                ]
                yield self._changes_event(entries)

    def _poll_cuts(self) -> Iterator[bytes]:
        store = self._call.sources.store()
        while True:
            assert isinstance(self.position, Cut)
            since = self.position
            found = at_least(store.tail_buckets(self._spec.name, since, EVENT_CHANGES), since)
            why = trimmed_past(self._call.sources.client, self._spec, since, found.cut)
            if why is not None:
                raise FeedEnded(log_trimmed(why, since, None))
            self.position = found.cut
            if found.changes:
                entries = [
                    {
                        "bucket": bucket,
                        "time": c.time,
                        "row": as_object(self._spec, c.row),
                        "diff": c.diff,
                    }
                    for bucket, c in found.changes
                ]
                yield self._changes_event(entries)
            if len(found.changes) < EVENT_CHANGES:  # caught up with the cut
                return

    def _changes_event(self, entries: list[dict[str, Any]]) -> bytes:
        metrics.CHANGES.inc(len(entries))
        text = position_text(self.position)
        data = {"as_of": position_json(self.position), "changes": entries}
        return sse_event("changes", text, data)


def _start_now(call: Call, spec: CollectionSpec) -> Position:
    """Where a stream without a position starts: after the readable time (or cut) now."""
    if spec.buckets == 1:
        return readable_time(call.sources.client, spec.name)
    return call.sources.store().cut(spec.name, readable=True)


def follow_changes(call: Call, request: Request) -> Answer:
    """The changes of ``{name}`` after ``Last-Event-ID``, ``since`` or now, as they come."""
    choose(request.header("Accept"), (EVENT_STREAM,))
    query = Query(request.query, single=("since",))
    name = request.arguments["name"]
    check_collection_name(name)
    resumed = (request.header("Last-Event-ID") or "").strip()
    # A reconnecting client repeats the URL it began with: its last id is where it is now.
    given, parameter = (resumed, "Last-Event-ID") if resumed else (query.one("since"), "since")

    def start() -> tuple[CollectionSpec, bytes | None, Position]:
        store = call.sources.store()
        spec = store.spec(name)
        record = raw_record(call.sources.client, spec.name)
        if given is None:
            return spec, record, _start_now(call, spec)
        position = parse_position(given, spec, parameter)
        why = trimmed_past(call.sources.client, spec, position)
        if why is not None:
            raise log_trimmed(why, position, parameter)
        return spec, record, position

    spec, record, position = call.read(start)
    feed = Feed(call, spec, record, position)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return Answer(feed.events(), EVENT_STREAM, headers=headers)
