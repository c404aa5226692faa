"""The consumer's TTL clock: a time by which everything Kafka held has been applied
(docs/concepts/ttl-and-expiration.md).

Rows expire a TTL after their latest refresh was applied, but only by this clock, never
by the wall clock alone: a refresh that reached Kafka before it is applied, so a row
expires only when no refresh of it arrived for a whole TTL. A slow batch, a stopped or
paused consumer, a Redis outage or a backlog after a restart hold the clock back; they
never expire a row whose refresh waits in Kafka.

The clock is the start of the latest trigger known to have read all there was:

- the latest batch's, when it left no lag (its progress ``timestamp`` is when the trigger
  began; it read up to the ``latestOffset`` planned then);
- while the query is idle (its latest trigger found no new data), one trigger interval
  ago: a processing-time trigger looks for new data once per interval.

A broker outage is the one fault during which refreshes cannot reach Kafka: the agents'
producers hold them and deliver them once the broker answers, within their reconnect
backoff (at most 1 s). So after an outage the clock stays 0 until a trigger began
``AFTER_OUTAGE_MS`` after its end.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from spark_consumers.metrics import caught_up

AFTER_OUTAGE_MS = 10_000
"""How long after an outage ended the producers' held refreshes may take to arrive."""


def trigger_start_ms(progress: Mapping[str, Any]) -> int:
    """When the trigger of a StreamingQueryProgress began (ms since the Unix epoch; 0 if
    the progress has no timestamp)."""
    stamp = progress.get("timestamp")
    if not isinstance(stamp, str):
        return 0
    try:
        moment = datetime.datetime.fromisoformat(stamp)
    except ValueError:
        return 0
    if moment.tzinfo is None:  # Spark writes UTC
        moment = moment.replace(tzinfo=datetime.UTC)
    return int(moment.timestamp() * 1000)


def idle(status: Mapping[str, Any]) -> bool:
    """Whether the query's latest trigger found no new data and no batch runs now."""
    return status.get("isDataAvailable") is False and status.get("isTriggerActive") is False


def ttl_clock_ms(
    progress: Mapping[str, Any],
    status: Mapping[str, Any],
    now_ms: int,
    trigger_interval_ms: int,
    outage_ended_ms: int | None = None,
) -> int:
    """The TTL clock (see the module); 0 when no such time is known yet.

    Args:
        progress: the query's latest progress, as a dict (empty before its first batch).
        status: the query's status, read after ``progress``.
        now_ms: the wall clock, when ``status`` was read.
        trigger_interval_ms: the query's processing-time trigger interval.
        outage_ended_ms: when the latest outage ended (``now_ms`` while one goes on);
            None when there was none.
    """
    if not caught_up(dict(progress)):
        return 0  # no batch since the query started, or it left a backlog
    clock = trigger_start_ms(progress)
    if idle(status):
        clock = max(clock, now_ms - trigger_interval_ms)
    if outage_ended_ms is not None and clock < outage_ended_ms + AFTER_OUTAGE_MS:
        return 0
    return clock
