"""The consumer's TTL clock: the start of the latest trigger that read all there was."""

from __future__ import annotations

from typing import Any

import pytest

from spark_consumers.row_ttl.clock import AFTER_OUTAGE_MS, trigger_start_ms, ttl_clock_ms

BEGAN = "2026-11-24T13:40:00.250Z"
BEGAN_MS = 1_795_527_600_250
INTERVAL = 500
BUSY = {"isDataAvailable": True, "isTriggerActive": True}
IDLE = {"isDataAvailable": False, "isTriggerActive": False}


def _progress(read: int, latest: int, timestamp: str = BEGAN) -> dict[str, Any]:
    offsets = {"sources": [{"endOffset": {"t": {"0": read}}, "latestOffset": {"t": {"0": latest}}}]}
    return {"timestamp": timestamp, **offsets}


def test_trigger_start_is_the_progress_timestamp_in_ms() -> None:
    assert trigger_start_ms({"timestamp": BEGAN}) == BEGAN_MS
    assert trigger_start_ms({"timestamp": "2026-11-24T13:40:00.250"}) == BEGAN_MS  # UTC
    assert trigger_start_ms({}) == 0
    assert trigger_start_ms({"timestamp": "yesterday"}) == 0


@pytest.mark.parametrize(
    ("progress", "status", "expected"),
    [
        ({}, IDLE, 0),  # no batch since the query started: a backlog may wait in Kafka
        (_progress(41, 45), BUSY, 0),  # the latest batch left a lag
        (_progress(41, 45), IDLE, 0),
        # A batch that read everything: its trigger's start, even if it ended much later.
        (_progress(45, 45), BUSY, BEGAN_MS),
        # Idle, the latest trigger found nothing new: at most one interval ago.
        (_progress(45, 45), IDLE, BEGAN_MS + 60_000 - INTERVAL),
        (_progress(45, 45), {"isDataAvailable": False, "isTriggerActive": True}, BEGAN_MS),
    ],
)
def test_the_clock_counts_only_what_was_read(
    progress: dict[str, Any], status: dict[str, Any], expected: int
) -> None:
    assert ttl_clock_ms(progress, status, BEGAN_MS + 60_000, INTERVAL) == expected


def test_after_an_outage_the_clock_waits_for_the_held_refreshes() -> None:
    progress, now = _progress(45, 45), BEGAN_MS + 60_000
    # The outage goes on (it "ends" now): no row expires.
    assert ttl_clock_ms(progress, IDLE, now, INTERVAL, outage_ended_ms=now) == 0
    # It ended: only a trigger that began AFTER_OUTAGE_MS later counts.
    ended = BEGAN_MS - AFTER_OUTAGE_MS + 1
    assert ttl_clock_ms(progress, BUSY, now, INTERVAL, outage_ended_ms=ended) == 0
    ended = BEGAN_MS - AFTER_OUTAGE_MS
    assert ttl_clock_ms(progress, BUSY, now, INTERVAL, outage_ended_ms=ended) == BEGAN_MS
