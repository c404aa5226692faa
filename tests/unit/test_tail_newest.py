"""``collections tail`` without ``--since``: the newest changes, read backwards from the end
of the log in bounded calls, never the whole log (no Redis: a stream stand-in)."""

from __future__ import annotations

import json
from typing import Any

from collection_manager.cli.progress import progress_json, progress_table
from collection_manager.storage.change_log import LOG_ENTRIES_PER_CALL, ChangeLog
from collection_manager.storage.keys import LOG_DIFFS_FIELD, LOG_ROWS_FIELD
from collection_manager.storage.progress import Binding, Progress


def _position(entry_id: str) -> tuple[int, int]:
    time, seq = entry_id.split("-")
    return int(time), int(seq)


class _Stream:
    """XREVRANGE of one stream, counting the calls and the entries they returned."""

    def __init__(self, entries: list[tuple[str, list[list[Any]], list[int]]]) -> None:
        self.entries = [
            (
                entry_id.encode(),
                {
                    LOG_ROWS_FIELD.encode(): json.dumps(rows).encode(),
                    LOG_DIFFS_FIELD.encode(): json.dumps(diffs).encode(),
                },
            )
            for entry_id, rows, diffs in entries
        ]
        self.calls: list[int] = []

    def xrevrange(self, _key: str, max: str, min: str, count: int) -> list[Any]:
        assert min == "-" and count == LOG_ENTRIES_PER_CALL
        if max.startswith("("):
            below = _position(max[1:])
            found = [e for e in self.entries if _position(e[0].decode()) < below]
        else:
            found = [e for e in self.entries if _position(e[0].decode())[0] <= int(max)]
        answer = list(reversed(found))[:count]
        self.calls.append(len(answer))
        return answer


def _log(times: int, per_time: int = 1) -> _Stream:
    """A log of ``times`` times, each one entry of ``per_time`` changes."""
    return _Stream(
        [
            (f"{t}-0", [["r1", n] for n in range(per_time)], [1] * per_time)
            for t in range(1, times + 1)
        ]
    )


def test_the_newest_are_the_last_oldest_first_and_read_in_one_call() -> None:
    stream = _log(1000)
    newest = ChangeLog(stream, "c").newest(1000, 3)  # type: ignore[arg-type]
    assert [c.time for c in newest] == [998, 999, 1000]
    assert stream.calls == [LOG_ENTRIES_PER_CALL]  # one bounded call, not the whole log


def test_older_entries_are_read_only_until_there_are_enough() -> None:
    stream = _log(1000)
    newest = ChangeLog(stream, "c").newest(1000, LOG_ENTRIES_PER_CALL + 5)  # type: ignore[arg-type]
    assert [c.time for c in newest][-1] == 1000 and len(newest) == LOG_ENTRIES_PER_CALL + 5
    assert len(stream.calls) == 2 and sum(stream.calls) < 1000


def test_an_entry_of_many_changes_gives_its_last_ones() -> None:
    stream = _log(3, per_time=5)
    newest = ChangeLog(stream, "c").newest(3, 7)  # type: ignore[arg-type]
    assert [(c.time, c.row[1]) for c in newest] == [(2, 3), (2, 4), *((3, n) for n in range(5))]


def test_only_readable_times_and_none_asked_reads_nothing() -> None:
    stream = _log(10)
    assert [c.time for c in ChangeLog(stream, "c").newest(6, 2)] == [5, 6]  # type: ignore[arg-type]
    assert ChangeLog(stream, "c").newest(10, 0) == []  # type: ignore[arg-type]
    assert stream.calls == [6]  # times 1 to 6, in the one call; none asked: no call


def test_a_short_log_is_all_of_it() -> None:
    stream = _log(4)
    assert [c.time for c in ChangeLog(stream, "c").newest(4, 10)] == [1, 2, 3, 4]  # type: ignore[arg-type]
    assert stream.calls == [4]


def test_progress_show_per_partition() -> None:
    progress = Progress({1: 998, 0: 1041}, Binding("cluster", "topic-id"))
    shown = progress_json("cm.requests", progress, {0: 3})
    assert shown == {
        "topic": "cm.requests",
        "cluster_id": "cluster",
        "topic_id": "topic-id",
        "partitions": [
            {"partition": 0, "offset": 1041, "lag": 3},
            {"partition": 1, "offset": 998, "lag": None},
        ],
    }
    table = progress_table("cm.requests", progress, {0: 3})
    assert table.rows == [(0, 1041, 3), (1, 998, None)]
    assert "cluster cluster" in table.title
    empty = progress_table("t", Progress({}, None), {})
    assert (empty.rows, empty.title) == ([], "progress on t")
