"""The client's event-stream parser (collection_manager/client/sse.py), without services:
lines however the bytes are cut, fields as EventSource reads them, what an event that
broke off leaves (nothing)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.client.sse import Event, EventParser, LineSplitter, StreamError

# What the server writes (collection_manager/http/changes.py): retry, position, changes, a
# keep-alive, an error without id.
STREAM = (
    b"retry: 1000\n\n"
    b'id: 0\nevent: position\ndata: {"as_of":0}\n\n'
    b'id: 3\nevent: changes\ndata: {"as_of":3,"changes":[]}\n\n'
    b": keep-alive\n\n"
    b'event: error\ndata: {"type":"urn:collection-manager:problem:unknown-collection"}\n\n'
)
EVENTS = [
    Event("position", "0", '{"as_of":0}'),
    Event("changes", "3", '{"as_of":3,"changes":[]}'),
    # No id of its own: the last one set stays (EventSource's lastEventId).
    Event("error", "3", '{"type":"urn:collection-manager:problem:unknown-collection"}'),
]


def parse(chunks: list[bytes]) -> tuple[list[Event], EventParser]:
    splitter, parser = LineSplitter(), EventParser()
    events = []
    for chunk in chunks:
        events += parser.feed(splitter.feed(chunk))
    return events, parser


def test_the_servers_stream_parses_to_its_events() -> None:
    events, parser = parse([STREAM])
    assert events == EVENTS
    assert (parser.retry_ms, parser.comments, parser.last_id) == (1000, 1, "3")


@given(st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=12))
def test_the_events_are_the_same_wherever_the_bytes_are_cut(cuts: list[int]) -> None:
    points = [0, *sorted(cuts), len(STREAM)]
    chunks = [STREAM[a:b] for a, b in itertools.pairwise(points)]
    assert parse(chunks)[0] == EVENTS


@pytest.mark.parametrize("end", [b"\r\n", b"\r", b"\n"])
def test_every_line_end_ends_a_line(end: bytes) -> None:
    text = STREAM.replace(b"\n", end)
    assert parse([text])[0] == EVENTS
    # A CR at the end of one chunk and its LF at the start of the next are one line end.
    assert parse([bytes([b]) for b in text])[0] == EVENTS


def test_fields_as_eventsource_reads_them() -> None:
    lines = [
        "data:no space",
        "data:  two spaces",  # only the first space goes
        "data",  # a field with no colon: an empty value
        "unknown: ignored",
        "id: a\0b",  # an id with NUL is ignored
        "retry: soon",  # not digits: ignored
        "",
    ]
    parser = EventParser()
    assert parser.feed(lines) == [Event("message", None, "no space\n two spaces\n")]
    assert (parser.last_id, parser.retry_ms) == (None, None)


def test_an_event_without_data_is_not_handed_on_but_its_id_stays() -> None:
    parser = EventParser()
    assert parser.feed(["id: 7", "event: position", ""]) == []
    assert parser.last_id == "7"
    assert parser.feed(["data: x", ""]) == [Event("message", "7", "x")]  # type reset too


def test_an_event_the_stream_broke_off_in_is_never_handed_on() -> None:
    whole = STREAM.index(b"id: 3")
    events, parser = parse([STREAM[: whole + 30]])  # into the changes event, before its end
    assert events == EVENTS[:1]
    assert parser.last_id == "3"  # read, but the feed resumes from what it handed on


def test_a_line_past_the_bound_or_not_utf8_is_refused() -> None:
    with pytest.raises(StreamError, match="more than 16 bytes"):
        LineSplitter(max_line=16).feed(b"data: " + b"x" * 20)
    with pytest.raises(StreamError, match="not UTF-8"):
        LineSplitter().feed(b"data: \xff\n")
