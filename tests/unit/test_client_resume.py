"""The change feed's resumption (collection_manager/client/resume.py and feed.py), without
services: positions compared, the waits bounded, and a feed over scripted connections that
break off mid-event, refuse, end or go silent, which hands on each change once and
reconnects with the id of the last event it handed on."""

from __future__ import annotations

import json
import ssl
from collections.abc import Iterator
from typing import Any

import pytest

from collection_manager.client import errors
from collection_manager.client.feed import ChangeFeed, Changes
from collection_manager.client.resume import Resume, position_text, reached, retriable
from collection_manager.client.urls import BaseUrl

URL = "http://127.0.0.1:8080/api/v1/collections/c/changes"


# Positions


@pytest.mark.parametrize(
    ("position", "until", "done"),
    [
        (3, 3, True),
        ("4", 3, True),
        (2, "3", False),
        ("5,6", "5,6", True),
        ("5,7", "5,6", True),
        ("6,5", "5,6", False),
        ("0", "0,0", True),  # 0: the start of any collection, bucketed ones too
        ("0", "0,1", False),
        ("3,1", "0", True),
    ],
)
def test_a_position_is_reached_when_it_is_at_least_until(
    position: int | str, until: int | str, done: bool
) -> None:
    assert reached(position, until) is done


def test_positions_of_two_collections_or_nonsense_are_refused() -> None:
    with pytest.raises(errors.ClientError, match="not positions of one collection"):
        reached("1,2,3", "1,2")
    for bad in (-1, "1, 2", "", "x", True, 1.5):
        with pytest.raises(errors.ClientError, match="a position is"):
            position_text(bad)  # type: ignore[arg-type]
    assert position_text(" 12,40,7 ") == "12,40,7"


def test_what_is_retried_and_what_is_not() -> None:
    def problem(cls: type[errors.ProblemError], status: int) -> errors.ProblemError:
        return cls(status=status, type=None, title="t", detail="d", url=URL)

    assert retriable(errors.ConnectionFailed(URL, "Connection refused"))
    assert retriable(errors.BrokenAnswer(URL, "cut short"))
    assert retriable(problem(errors.TooManyRequests, 503))
    assert retriable(problem(errors.ServerTimeout, 504))
    for cls, status in (
        (errors.BadRequest, 400),
        (errors.Unauthorized, 401),
        (errors.UnknownCollection, 404),
        (errors.LogTrimmed, 410),
        (errors.ServerError, 500),
    ):
        assert not retriable(problem(cls, status))
    untrusted = errors.ConnectionFailed(URL, "TLS")
    untrusted.__cause__ = ssl.SSLCertVerificationError("certificate verify failed")
    assert not retriable(untrusted)


def test_waits_double_up_to_their_bound_and_the_retries_end() -> None:
    resume = Resume(retries=6, backoff_s=0.5, max_backoff_s=4)
    assert [resume.delay() for _ in range(7)] == [0.5, 1, 2, 4, 4, 4, None]
    resume = Resume(retries=3, backoff_s=0.5)
    resume.retry_ms = 1000  # the stream's retry field raises the first wait
    assert resume.delay() == 1.0
    assert resume.delay(retry_after=5) == 5  # Retry-After, when longer
    resume.healthy()  # a keep-alive came: the count starts again
    assert (resume.failures, resume.delay()) == (0, 1.0)
    assert resume.reconnects == 3


def test_a_position_is_sent_as_last_event_id_once_there_is_one() -> None:
    resume = Resume()
    assert resume.headers() == {}
    resume.started("0")
    assert resume.headers() == {"Last-Event-ID": "0"}
    resume.delay()
    resume.started("0")  # saying where it starts proves nothing: the failures stay
    assert resume.failures == 1
    resume.delivered("7")
    assert (resume.headers(), resume.failures) == ({"Last-Event-ID": "7"}, 0)


# The feed over scripted connections


def event(kind: str, event_id: str | None, data: Any) -> bytes:
    head = "" if event_id is None else f"id: {event_id}\n"
    return f"{head}event: {kind}\ndata: {json.dumps(data)}\n\n".encode()


def changes(time: int) -> bytes:
    change = {"time": time, "row": {"n": time}, "diff": 1}
    return event("changes", str(time), {"as_of": time, "changes": [change]})


def position(at: int) -> bytes:
    return event("position", str(at), {"as_of": at})


class FakeAnswer:
    """A stream of chunks, then the end (b""), or a failure raised where the script says."""

    def __init__(self, chunks: list[bytes | Exception]) -> None:
        self._chunks: Iterator[bytes | Exception] = iter(chunks)
        self.closed = False

    def read1(self, size: int) -> bytes:
        chunk = next(self._chunks, b"")
        if isinstance(chunk, Exception):
            raise chunk
        return chunk

    def close(self) -> None:
        self.closed = True


class FakeTransport:
    """Hands out the scripted connections in order, recording what each request sent."""

    base = BaseUrl.parse("http://127.0.0.1:8080")

    def __init__(self, *script: list[bytes | Exception] | Exception) -> None:
        self._script = list(script)
        self.sent: list[dict[str, str]] = []
        self.answers: list[FakeAnswer] = []

    def get(self, target: str, accept: str, headers: dict[str, str], **_: Any) -> FakeAnswer:
        assert accept == "text/event-stream"
        self.sent.append(dict(headers))
        step = self._script.pop(0)
        if isinstance(step, Exception):
            raise step
        self.answers.append(FakeAnswer(step))
        return self.answers[-1]


def feed_of(
    transport: FakeTransport, since: int | None = 0, until: int | None = None, retries: int = 5
) -> tuple[ChangeFeed, list[float]]:
    slept: list[float] = []
    resume = Resume(retries=retries, backoff_s=0.5)
    feed = ChangeFeed(transport, "c", since, until, resume, 60.0, slept.append)  # type: ignore[arg-type]
    return feed, slept


def times(found: list[Changes]) -> list[int]:
    return [c.time for e in found for c in e.changes]


def cut_short() -> errors.BrokenAnswer:
    return errors.BrokenAnswer(URL, "the answer was cut short")


def test_a_feed_cut_mid_event_resumes_after_the_last_event_it_handed_on() -> None:
    half = changes(3)[: len(changes(3)) // 2]
    transport = FakeTransport(
        [b"retry: 1000\n\n", position(0), changes(1), changes(2), half, cut_short()],
        [position(2), changes(3), changes(4)],  # then the server ends the stream
        errors.ConnectionFailed(URL, "Connection refused"),  # a restart, say
        [position(4), b": keep-alive\n\n", changes(5)],
    )
    feed, slept = feed_of(transport, until=5)
    found = list(feed)
    assert times(found) == [1, 2, 3, 4, 5]  # each once, in order
    assert [e.position for e in found] == ["1", "2", "3", "4", "5"]
    assert [h.get("Last-Event-ID") for h in transport.sent] == [None, "2", "4", "4"]
    # The server's retry (1 s), doubled after the refusal; events in between reset it.
    assert slept == [1.0, 1.0, 2.0]
    assert feed.position == "5" and feed.resume.reconnects == 3
    assert all(answer.closed for answer in transport.answers)


def test_a_feed_gives_up_after_its_retries_naming_where_it_is() -> None:
    refused = errors.ConnectionFailed(URL, "Connection refused")
    transport = FakeTransport([position(0), changes(1)], refused, refused, refused)
    feed, slept = feed_of(transport, retries=2)
    assert times([next(feed)]) == [1]
    with pytest.raises(errors.ConnectionFailed) as gave_up:
        next(feed)
    assert "gave up after 2 reconnections" in str(gave_up.value)
    assert "since=1 goes on from there" in str(gave_up.value)
    assert slept == [0.5, 1.0]


def test_a_stream_that_drops_after_its_position_each_time_is_given_up_on() -> None:
    transport = FakeTransport(*([[position(0), cut_short()]] * 4))
    feed, slept = feed_of(transport, retries=3)
    with pytest.raises(errors.ConnectionFailed, match="gave up after 3"):
        list(feed)
    assert slept == [0.5, 1.0, 2.0]


def test_a_refusal_or_an_error_event_ends_the_feed_with_its_problem() -> None:
    trimmed = errors.LogTrimmed(status=410, type=None, title="t", detail="trimmed", url=URL)
    feed, slept = feed_of(FakeTransport(trimmed))
    with pytest.raises(errors.LogTrimmed):
        next(feed)
    dropped = {
        "type": "urn:collection-manager:problem:unknown-collection",
        "title": "No such collection",
        "status": 404,
        "detail": "c was dropped",
        "parameter": "name",
    }
    feed, slept = feed_of(FakeTransport([position(0), changes(1), event("error", None, dropped)]))
    assert times([next(feed)]) == [1]
    with pytest.raises(errors.UnknownCollection, match="c was dropped") as ended:
        next(feed)
    assert ended.value.parameter == "name" and slept == []


def test_a_busy_server_is_waited_for_as_retry_after_asks() -> None:
    busy = errors.TooManyRequests(
        status=503, type=None, title="t", detail="busy", url=URL, retry_after=3.0
    )
    feed, slept = feed_of(FakeTransport(busy, [position(0), changes(1)]), until=1)
    assert times(list(feed)) == [1] and slept == [3.0]


def test_without_since_the_feed_starts_where_the_server_says_and_until_may_be_there() -> None:
    transport = FakeTransport([position(7)])
    feed, _ = feed_of(transport, since=None, until=7)
    assert list(feed) == [] and feed.position == "7"


def test_closing_a_feed_closes_its_connection() -> None:
    transport = FakeTransport([position(0), changes(1), changes(2)])
    feed, _ = feed_of(transport)
    with feed:
        next(feed)
    assert transport.answers[0].closed
    with pytest.raises(StopIteration):
        next(feed)
