"""``collections tail --since 5m``: durations, and the binary search over a log's clocks
for where the last duration begins (no Redis: a stream stand-in counting its calls)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from typing import Any

import pytest

from collection_manager.cli.tail_since import DURATION_UNITS, duration_ms, since_argument
from collection_manager.storage.change_log import ChangeLog, entry_clock
from collection_manager.storage.keys import LOG_CLOCK_FIELD, LOG_DIFFS_FIELD, LOG_ROWS_FIELD
from collection_manager.storage.log_clock import MAX_PROBES


@pytest.mark.parametrize(
    ("text", "ms"),
    [("30s", 30_000), ("5m", 300_000), ("2h", 7_200_000), ("1d", 86_400_000), ("0s", 0)],
)
def test_a_duration_is_taken_in_ms(text: str, ms: int) -> None:
    assert duration_ms(text) == ms
    assert since_argument(text) == text


@pytest.mark.parametrize("text", ["10ms", "1w", "1.5h", "5min", "3 days", "2H"])
def test_a_duration_in_another_unit_is_refused_naming_the_units(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"a unit, s, m, h or d \(30s, 5m"):
        since_argument(text)


@pytest.mark.parametrize("text", ["41", "12,40,7", "0"])
def test_times_and_cuts_are_no_durations(text: str) -> None:
    assert duration_ms(text) is None
    assert since_argument(text) == text


def test_anything_else_names_durations_too() -> None:
    with pytest.raises(argparse.ArgumentTypeError, match=r"or a duration: .* s, m, h or d"):
        since_argument("yesterday!")
    assert set(DURATION_UNITS) == {"s", "m", "h", "d"}


def _position(bound: str) -> tuple[int, int]:
    time, _, seq = bound.partition("-")
    return int(time), int(seq or 0)


class _Stream:
    """XRANGE ``<bound> + COUNT 1`` of one log: entries ``(time, clock or None)``, one per
    time, in order; ``calls`` counts the probes."""

    def __init__(self, entries: Sequence[tuple[int, int | None]]) -> None:
        self.entries = []
        for time, clock in entries:
            fields = {LOG_ROWS_FIELD.encode(): b'[["r1"]]', LOG_DIFFS_FIELD.encode(): b"[1]"}
            if clock is not None:
                fields[LOG_CLOCK_FIELD.encode()] = json.dumps(clock).encode()
            self.entries.append((f"{time}-0".encode(), fields))
        self.calls = 0

    def xrange(self, _key: str, min: str, max: str, count: int) -> list[Any]:
        assert max == "+" and count == 1  # one entry a call, never a range of the log
        self.calls += 1
        if min == "-":
            return self.entries[:1]
        low = _position(min)
        return [e for e in self.entries if _position(e[0].decode()) >= low][:1]


def _first(stream: _Stream, since_ms: int, through: int) -> int:
    return ChangeLog(stream, "c").first_time_since(since_ms, through)  # type: ignore[arg-type]


def test_the_first_time_applied_since_is_found_in_few_calls() -> None:
    # Times 1..100000, applied a ms apart from 1,000,000 on (time t at 999,999 + t).
    stream = _Stream([(t, 999_999 + t) for t in range(1, 100_001)])
    assert _first(stream, 1_090_000, 100_000) == 90_001
    assert stream.calls <= 18  # log2(100,000) + 1, not a read of the log


def test_times_of_one_clock_start_at_their_first() -> None:
    stream = _Stream([(1, 10), (2, 20), (3, 20), (4, 20), (5, 30)])
    assert _first(stream, 20, 5) == 2
    assert _first(stream, 21, 5) == 5


def test_times_without_changes_are_skipped() -> None:
    stream = _Stream([(3, 10), (40, 20), (41, 30), (900, 40)])
    assert _first(stream, 15, 1000) == 40
    assert _first(stream, 35, 1000) == 900


def test_entries_without_a_clock_are_older_than_any_duration() -> None:
    stream = _Stream([(1, None), (2, None), (3, None), (4, 500), (5, 600)])
    assert _first(stream, 0, 5) == 4
    assert _first(stream, 550, 5) == 5
    assert _first(_Stream([(1, None), (2, None)]), 0, 2) == 3
    assert entry_clock({}) is None


def test_all_older_all_newer_and_an_empty_log() -> None:
    stream = _Stream([(t, 100 * t) for t in range(1, 11)])
    assert _first(stream, 10_000, 10) == 11  # all older: the next time, nothing to print
    assert _first(stream, 0, 10) == 1  # all newer: from the first, in one call
    empty = _Stream([])
    assert _first(empty, 0, 0) == 1 and empty.calls == 1


def test_only_readable_times() -> None:
    # Time 6 is a delete in progress: its changes are in the log, not readable yet.
    stream = _Stream([(t, 100 * t) for t in range(1, 7)])
    assert _first(stream, 550, 5) == 6  # none readable is recent enough: after 5
    assert _first(stream, 450, 5) == 5


def test_a_clock_that_steps_back_gives_a_start_near_the_true_one() -> None:
    # A failover to a replica 5 ms behind, after time 50.
    clocks = [(t, 1000 + t) for t in range(1, 51)] + [(t, 995 + t) for t in range(51, 101)]
    start = _first(_Stream(clocks), 1048, 100)
    assert 48 <= start <= 53


def test_the_search_is_bounded_on_the_longest_log() -> None:
    # Times near the top of the numeric domain: still at most MAX_PROBES calls.
    top = 2**53 - 1
    stream = _Stream([(1, 0), (top - 1, 5), (top, 10)])
    assert _first(stream, 7, top) == top
    assert stream.calls <= MAX_PROBES
