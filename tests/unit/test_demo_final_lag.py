"""The demo's last status line agrees with its "caught up (lag 0)": once caught up, the lag
is of what Kafka held then (the state the comparison is of), though the controller's
ticks and the survivors' heartbeats keep arriving. No services: the observer is a fake
whose Kafka grows by a few requests at every look."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from collection_manager.demo.frames import ConsumerView, Frame
from collection_manager.demo.observe import lag
from collection_manager.demo.phases import DemoRun
from collection_manager.demo.runner import Plan


class _Observer:
    """Kafka gains 2 requests per look; the consumer is at 10 once it caught up."""

    collections = ("compute_frontiers",)

    def __init__(self) -> None:
        self.end = 10

    def end_offsets(self) -> dict[int, int]:
        self.end += 2
        return {0: self.end - 2}

    def position(self) -> dict[int, int]:
        return {0: 10}

    def consumer(self, end: Mapping[int, int] | None = None) -> ConsumerView:
        return ConsumerView(lag=lag(self.end_offsets() if end is None else end, self.position()))

    def rows(self) -> tuple[dict[str, Any], dict[str, int]]:
        return {}, {}

    def statuses(self) -> dict[str, Any]:
        return {}


class _Children:
    def state_file(self, replica: str) -> Path:
        return Path("/nonexistent") / replica


def test_after_catching_up_the_last_line_says_lag_0() -> None:
    frames: list[Frame] = []
    reporter: Any = type("Reporter", (), {"show": lambda _self, frame: frames.append(frame)})()
    observer: Any = _Observer()
    run = DemoRun(Plan.of(3, 10.0, 1000), reporter, observer, None, _Children(), 10.0, 0.0)
    run.catch_up()
    run.refresh()  # as the verdict does, while ticks and heartbeats arrive
    assert run.events[-1].endswith(
        "consumer caught up: every request Kafka held then is applied (lag 0)"
    )
    assert frames[-1].consumer.lag == 0
