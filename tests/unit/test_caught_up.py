"""When the consumer may expire rows by their TTL: once a batch read all there was."""

from __future__ import annotations

from typing import Any

import pytest

from spark_consumers.metrics import caught_up


def _progress(end: dict[str, int], latest: dict[str, int]) -> dict[str, Any]:
    return {"sources": [{"endOffset": {"t": end}, "latestOffset": {"t": latest}}]}


@pytest.mark.parametrize(
    ("progress", "expected"),
    [
        ({}, False),  # no batch finished since the query started: a backlog may wait
        ({"sources": []}, False),
        (_progress({"0": 41, "1": 7}, {"0": 41, "1": 7}), True),
        (_progress({"0": 41, "1": 7}, {"0": 45, "1": 7}), False),
    ],
)
def test_caught_up_once_a_batch_read_everything_there_was(
    progress: dict[str, Any], expected: bool
) -> None:
    assert caught_up(progress) is expected
