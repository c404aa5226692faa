"""The watch loop over a stand-in query (spark_consumers/query_watch.py): what each round
tells the metrics and records, and how a failed query ends it."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from spark_consumers import query_watch
from spark_consumers.errors import ConsumerError
from spark_consumers.query_watch import QuerySupervision, watch


class FakeQuery:
    """A query whose rounds report ``progresses`` in turn, then ends (with ``failure``)."""

    def __init__(self, progresses: list[dict[str, Any] | None], failure: str = "") -> None:
        self._progresses, self._failure = progresses, failure
        self.rounds, self.stopped = 0, False
        self.status = {"isTriggerActive": False}

    @property
    def isActive(self) -> bool:  # PySpark's names
        return not self.stopped and self.rounds < len(self._progresses)

    def awaitTermination(self, _timeout_s: float) -> None:
        self.rounds += 1

    @property
    def lastProgress(self) -> dict[str, Any] | None:
        return self._progresses[self.rounds - 1]

    def exception(self) -> str | None:
        return self._failure or None

    def stop(self) -> None:
        self.stopped = True


class Timer:
    def __init__(self) -> None:
        self.clocks: list[int | None] = []

    def tick(self, clock: int | None) -> int:
        self.clocks.append(clock)
        return 2

    def settle_cuts(self, _clock: int | None) -> list[str]:
        return ["settled"]


class Observed:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        return lambda *args: self.calls.append((name, args))


PROGRESSES: list[dict[str, Any] | None] = [
    None,
    {"timestamp": "t1", "batchId": 0},
    {"timestamp": "t2", "batchId": 0},  # an idle trigger: new timestamp, same batch
    {"timestamp": "t2", "batchId": 0},
    {"timestamp": "t3", "batchId": 1},
]


def test_each_round_ticks_the_timer_at_the_ttl_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    clocks: list[tuple[Any, ...]] = []

    def ttl_clock_ms(*args: Any) -> int:
        clocks.append(args[3:])  # the trigger and the end of the latest outage
        return 42

    monkeypatch.setattr(query_watch, "ttl_clock_ms", ttl_clock_ms)
    timer, observed = Timer(), Observed()
    supervision = QuerySupervision(
        timer=timer,  # type: ignore[arg-type]
        trigger_interval_ms=500,
        observed=observed,  # type: ignore[arg-type]
    )
    watch(FakeQuery(PROGRESSES), threading.Event(), supervision)
    assert timer.clocks == [42] * len(PROGRESSES)
    assert clocks == [(500, None)] * len(PROGRESSES)
    assert ("timer_retracted", (2,)) in observed.calls
    assert ("cuts_settled", (["settled"],)) in observed.calls


def test_each_new_batch_is_recorded_once_and_each_progress_observed_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    recorded: list[tuple[str, str, Any]] = []
    monkeypatch.setattr(
        query_watch,
        "record_progress",
        lambda url, topic, progress: recorded.append((url, topic, progress["batchId"])),
    )
    monkeypatch.setattr(query_watch, "read_offsets", lambda progress: progress["timestamp"])
    observed, news = Observed(), list[str]()
    supervision = QuerySupervision(
        redis_url="redis://r",
        topic="t",
        on_progress=lambda: news.append("progress"),
        observed=observed,  # type: ignore[arg-type]
    )
    query = FakeQuery(PROGRESSES)
    watch(query, threading.Event(), supervision)
    assert recorded == [("redis://r", "t", 0), ("redis://r", "t", 1)]
    assert news == ["progress", "progress"]
    assert [args for name, args in observed.calls if name == "progress"] == [
        ("t1",),
        ("t2",),
        ("t3",),
    ]
    assert [name for name, _ in observed.calls].count("beat") == len(PROGRESSES)
    assert observed.calls[0] == ("query_running", (True,))
    assert observed.calls[-1] == ("query_running", (False,))
    assert query.stopped


def test_without_a_redis_url_nothing_is_recorded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(query_watch, "record_progress", pytest.fail)
    watch(FakeQuery(PROGRESSES), threading.Event())


def test_a_failed_query_raises_with_its_reduced_message() -> None:
    query = FakeQuery([None], failure="java.lang.RuntimeException: boom\n\tat Some.frame")
    with pytest.raises(ConsumerError, match=r"streaming query failed: .*boom") as raised:
        watch(query, threading.Event(), QuerySupervision())
    assert "Some.frame" not in str(raised.value)
    assert query.stopped


def test_a_set_stop_ends_the_watch_before_any_round() -> None:
    stop = threading.Event()
    stop.set()
    query = FakeQuery(PROGRESSES)
    watch(query, stop, QuerySupervision())
    assert query.rounds == 0 and query.stopped
