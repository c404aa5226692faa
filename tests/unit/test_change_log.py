"""The change log's reader (``storage/change_log.py``) on an in-memory stream that answers
``XRANGE``, ``XREVRANGE`` and ``XINFO STREAM`` as Redis does: paging it gives what reading
it whole gives, every call is bounded, and a trimmed log is refused past a position."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
import redis
from hypothesis import given, settings
from hypothesis import strategies as st

from collection_manager.core.errors import LogTrimmedError
from collection_manager.core.specs import Row
from collection_manager.core.stepped_read import Change
from collection_manager.storage.change_log import LOG_ENTRIES_PER_CALL, MAX_PAGE_ENTRIES, ChangeLog
from collection_manager.storage.keys import LOG_CLOCK_FIELD, LOG_DIFFS_FIELD, LOG_ROWS_FIELD
from collection_manager.storage.log_positions import (
    LAST_SEQ,
    LogPosition,
    trim_front,
    trimmed_past,
    trimmed_through_time,
)

SETTINGS = settings(max_examples=150, deadline=None)
EntryId = tuple[int, int]
_TOP = (2**64, 0)  # above every id


def _bound(text: str, low: bool) -> tuple[EntryId, bool]:
    """An XRANGE bound as ``(id, inclusive)``: ``-``, ``+``, ``t``, ``t-s``, ``(t-s``."""
    if text == "-":
        return (0, 0), True
    if text == "+":
        return _TOP, True
    inclusive = not text.startswith("(")
    time, dash, seq = text.lstrip("(").partition("-")
    if dash:
        return (int(time), int(seq)), inclusive
    return (int(time), 0 if low else LAST_SEQ), inclusive


class MemoryStream:
    """One stream in memory, answering as Redis does; ``calls`` holds each read's COUNT."""

    def __init__(self, entries: Sequence[tuple[EntryId, list[Any], list[int]]]) -> None:
        self.entries: list[tuple[EntryId, dict[bytes, bytes]]] = []
        for number, (entry, rows, diffs) in enumerate(entries):
            fields = {
                LOG_ROWS_FIELD.encode(): json.dumps(rows).encode(),
                LOG_DIFFS_FIELD.encode(): json.dumps(diffs).encode(),
                LOG_CLOCK_FIELD.encode(): str(1000 + number).encode(),
            }
            self.entries.append((entry, fields))
        self.added = len(self.entries)
        self.trimmed: list[EntryId] = []
        self.calls: list[int] = []

    def trim(self, count: int) -> None:
        """Drops the ``count`` oldest entries, as ``XADD MAXLEN`` does."""
        self.trimmed += [entry for entry, _ in self.entries[:count]]
        del self.entries[:count]

    def _reply(self, found: list[tuple[EntryId, dict[bytes, bytes]]]) -> list[Any]:
        return [(f"{t}-{s}".encode(), fields) for (t, s), fields in found]

    def xrange(self, _key: str, min: str, max: str, count: int) -> list[Any]:
        assert count is not None
        self.calls.append(count)
        (low, low_in), (high, high_in) = _bound(min, True), _bound(max, False)
        found = [
            (entry, fields)
            for entry, fields in self.entries
            if (entry >= low if low_in else entry > low)
            and (entry <= high if high_in else entry < high)
        ]
        return self._reply(found[:count])

    def xrevrange(self, _key: str, max: str, min: str, count: int) -> list[Any]:
        assert count is not None
        self.calls.append(count)
        (low, _), (high, high_in) = _bound(min, True), _bound(max, False)
        found = [
            (entry, fields)
            for entry, fields in reversed(self.entries)
            if entry >= low and (entry <= high if high_in else entry < high)
        ]
        return self._reply(found[:count])

    def xinfo_stream(self, _key: str) -> dict[str, Any]:
        if not self.added:  # no key: Redis answers an error
            raise redis.ResponseError("no such key")
        last = self.trimmed[-1] if not self.entries else self.entries[-1][0]
        first = self._reply(self.entries[:1])
        return {
            "length": len(self.entries),
            "entries-added": self.added,
            "first-entry": first[0] if first else None,
            "last-generated-id": f"{last[0]}-{last[1]}".encode(),
        }


# A log: per time (1, 2, ...), its entries' sizes (a time may have no entry at all).
logs = st.lists(st.lists(st.integers(1, 4), max_size=3), min_size=1, max_size=30)


def _stream(sizes: list[list[int]]) -> tuple[MemoryStream, list[Change[Row]]]:
    entries, changes = [], []
    for time, entry_sizes in enumerate(sizes, start=1):
        for seq, size in enumerate(entry_sizes):
            rows = [[f"r{time}", seq, n] for n in range(size)]
            entries.append(((time, seq), rows, [1] * size))
            changes += [Change(time, tuple(row), 1) for row in rows]
    return MemoryStream(entries), changes


def _log(stream: MemoryStream) -> ChangeLog:
    return ChangeLog(stream, "c")  # type: ignore[arg-type]


def _bounded(stream: MemoryStream, most: int = LOG_ENTRIES_PER_CALL) -> bool:
    return all(1 <= count <= most for count in stream.calls)


@SETTINGS
@given(logs, st.integers(1, 7), st.booleans())
def test_paging_after_positions_reads_the_whole_log_once(
    sizes: list[list[int]], limit: int, bounded: bool
) -> None:
    stream, whole = _stream(sizes)
    log, through = _log(stream), len(sizes) if bounded else None
    position, read = LogPosition(0), []
    for _ in range(len(stream.entries) + 2):
        page = log.after(position, limit, through)
        assert page.position >= position
        read += page.changes
        position = page.position
        if not page.full:
            break
    assert read == whole
    assert _bounded(stream, limit)
    if bounded:  # all of it read through the time asked: the position is that time
        assert position == LogPosition(len(sizes))


@SETTINGS
@given(logs, st.data())
def test_a_page_goes_on_from_any_entry_a_follower_recorded(
    sizes: list[list[int]], data: st.DataObject
) -> None:
    stream, whole = _stream(sizes)
    ids = [entry for entry, _ in stream.entries]
    start = data.draw(st.sampled_from([(0, LAST_SEQ), *ids]))
    position = LogPosition(*start)
    assert LogPosition.parse(position.text()) == position
    page = _log(stream).after(position, MAX_PAGE_ENTRIES)
    assert not page.full
    kept = [entry for entry in ids if entry > start]
    expected = [c for c in whole if (c.time, c.row[1]) in set(kept)]
    assert page.changes == expected
    assert page.position == (LogPosition(*kept[-1]) if kept else position)


@SETTINGS
@given(logs, st.integers(0, 32), st.integers(0, 32))
def test_changes_between_times_are_those_of_the_whole_log(
    sizes: list[list[int]], after: int, through: int
) -> None:
    stream, whole = _stream(sizes)
    got = list(_log(stream).changes(after, through))
    assert got == [c for c in whole if after < c.time <= through]
    assert _bounded(stream)


@SETTINGS
@given(logs, st.integers(0, 32), st.integers(1, 9))
def test_reading_whole_times_on_from_where_each_stopped_reads_each_change_once(
    sizes: list[list[int]], after: int, most: int
) -> None:
    stream, whole = _stream(sizes)
    log, through = _log(stream), len(sizes)
    read, reached = [], after
    while reached < through:
        changes, following = log.times(reached, through, most)
        assert following > reached or not changes
        assert all(reached < c.time <= following for c in changes)  # whole times only
        read += changes
        if following == reached:
            break
        reached = following
    assert read == [c for c in whole if after < c.time <= through]
    assert _bounded(stream)


@SETTINGS
@given(logs, st.integers(0, 32), st.integers(0, 32), st.one_of(st.none(), st.integers(0, 40)))
def test_since_and_newest_are_slices_of_the_whole_log(
    sizes: list[list[int]], since: int, through: int, limit: int | None
) -> None:
    stream, whole = _stream(sizes)
    log = _log(stream)
    found = [c for c in whole if since <= c.time <= through]
    assert log.since(since, through, limit) == (found if limit is None else found[:limit])
    count = limit or 0
    upto = [c for c in whole if c.time <= through]
    assert log.newest(through, count) == upto[max(0, len(upto) - count) :]
    assert _bounded(stream)


entry_ids = st.tuples(st.integers(1, 50), st.integers(0, 5))


@SETTINGS
@given(st.one_of(st.none(), entry_ids), st.integers(0, 60))
def test_a_time_is_trimmed_past_just_when_the_log_is_trimmed_through_a_later_one(
    front: tuple[int, int] | None, after: int
) -> None:
    assert trimmed_past(front, LogPosition(after)) == (trimmed_through_time(front) > after)


@SETTINGS
@given(logs, st.data())
def test_a_position_with_a_trimmed_entry_after_it_is_refused(
    sizes: list[list[int]], data: st.DataObject
) -> None:
    stream, _ = _stream(sizes)
    ids = [entry for entry, _ in stream.entries]
    stream.trim(data.draw(st.integers(0, len(ids))))
    start = data.draw(st.sampled_from([(0, LAST_SEQ), *ids]))
    log, position = _log(stream), LogPosition(*start)
    if any(entry > start for entry in stream.trimmed):
        with pytest.raises(LogTrimmedError) as refused:
            log.after(position)
        assert refused.value.trimmed_through == log.trimmed_through()
        assert refused.value.after == position.text()
    elif not stream.trimmed or (stream.entries and stream.entries[0][0] == position.successor()):
        log.check_held(position)  # nothing after it went: no refusal


def test_the_trim_front_and_the_time_trimmed_through() -> None:
    info = {"length": 3, "entries-added": 3, "first-entry": (b"1-0", {}), "last-generated-id": ""}
    assert trim_front(info) is None and trimmed_through_time(None) == 0
    info = {**info, "entries-added": 5, "first-entry": (b"4-2", {})}
    assert trim_front(info) == (4, 2) and trimmed_through_time((4, 2)) == 4
    assert trimmed_through_time((4, 0)) == 3  # the whole of time 3 went, none of 4
    empty = {"length": 0, "entries-added": 5, "first-entry": None, "last-generated-id": b"7-1"}
    assert trim_front(empty) == (7, 2) and trimmed_through_time((7, 2)) == 7


def test_a_log_never_written_is_not_trimmed() -> None:
    class Missing:
        def xinfo_stream(self, _key: str) -> None:
            raise redis.ResponseError("no such key")

    log = ChangeLog(Missing(), "c")  # type: ignore[arg-type]
    assert log.trimmed_through() == 0
    log.check_held(0)


def test_the_reader_refuses_a_page_too_large_and_positions_out_of_range() -> None:
    log = _log(_stream([[1]])[0])
    for limit in (0, MAX_PAGE_ENTRIES + 1):
        with pytest.raises(ValueError, match="a page holds"):
            log.after(0, limit)
    for text in ("x", "-3", "1-2-3", ""):
        with pytest.raises(ValueError, match="a time or an entry id"):
            LogPosition.parse(text)
    with pytest.raises(ValueError, match="no change-log position"):
        LogPosition(-1)


def test_positions_order_as_the_entries_do() -> None:
    assert LogPosition(3, 0) < LogPosition(3, 7) < LogPosition(3) < LogPosition(4, 0)
    assert LogPosition(3).start() == "4-0" and LogPosition(3, 7).start() == "(3-7"
    assert (LogPosition(3).text(), LogPosition(3, 7).text()) == ("3", "3-7")
    assert LogPosition.of(5) == LogPosition(5) == LogPosition.parse(" 5 ")
