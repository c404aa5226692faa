"""Watching a running streaming query until it should stop, then stopping it cleanly.

``watch`` is the loop the consumer spends its life in (``spark_consumers/run.py``): about
every 0.5 s it ticks the retraction timer, reports to the consumer's metrics and records
each new batch's progress; what it does besides waiting is a ``QuerySupervision``.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from spark_consumers.errors import ConsumerError, reduced_message
from spark_consumers.exporter import ConsumerObservability
from spark_consumers.metrics import read_offsets, record_progress
from spark_consumers.row_ttl.clock import ttl_clock_ms
from spark_consumers.row_ttl.retraction_timer import RetractionTimer
from spark_consumers.supervision import Outage


@dataclasses.dataclass(frozen=True)
class QuerySupervision:
    """What ``watch`` does for a running query besides waiting for it; each part is optional.

    One is built per consumer and kept over the query's restarts after an outage.

    Attributes:
        duration_s: stop the query after this long (None: only when ``stop`` is set).
        redis_url: where each new batch's progress is recorded ("": it is not).
        topic: the consumer's topic, whose progress that is.
        timer: ticked every round with the TTL clock (``spark_consumers/row_ttl/clock.py``).
        trigger_interval_ms: the query's trigger, for the TTL clock.
        outage: the consumer's outage record, for the TTL clock after an outage.
        on_progress: told after each new batch's progress was recorded.
        observed: told of each round, each progress, the timer's work and the query's state.
    """

    duration_s: float | None = None
    redis_url: str = ""
    topic: str = ""
    timer: RetractionTimer | None = None
    trigger_interval_ms: int = 0
    outage: Outage | None = None
    on_progress: Callable[[], None] | None = None
    observed: ConsumerObservability | None = None


@dataclasses.dataclass
class _Seen:
    """The latest progress a round handled, so that the next one handles only news."""

    timestamp: Any = None
    batch_id: Any = None


def watch(
    query: Any, stop: threading.Event, supervision: QuerySupervision = QuerySupervision()
) -> None:
    """Waits until ``stop`` is set, ``duration_s`` passed or the query failed; then stops it.

    Meanwhile it ticks ``timer`` about every 0.5 s, with the TTL clock of the query's
    progress and status and of ``outage`` (``spark_consumers/row_ttl/clock.py``), and tells
    ``observed`` of each round and each progress (all of ``supervision``).

    Stopping interrupts the running micro-batch between two atomic store calls: what was
    applied is recorded in the watermarks, and the restarted query replays the rest.

    Raises:
        ConsumerError: when the query stopped with an error.
    """
    duration_s, observed = supervision.duration_s, supervision.observed
    deadline = None if duration_s is None else time.monotonic() + duration_s
    seen = _Seen()
    if observed is not None:
        observed.query_running(True)
    try:
        while not stop.is_set() and query.isActive:
            if deadline is not None and time.monotonic() >= deadline:
                break
            query.awaitTermination(0.5)
            _round(query, supervision, seen)
    finally:
        if observed is not None:
            observed.query_running(False)
        stop_between_batches(query)
    if query.exception() is not None:
        failure = reduced_message(str(query.exception()))
        raise ConsumerError(f"the consumer's streaming query failed: {failure}")


def _round(query: Any, supervision: QuerySupervision, seen: _Seen) -> None:
    """One round of ``watch``, after the query's wait: the timer, the metrics, the progress."""
    progress = _as_dict(query.lastProgress)
    observed = supervision.observed
    if supervision.timer is not None:
        _tick(supervision.timer, query, progress, supervision)
    if observed is not None:
        observed.beat()
    # An idle trigger reports progress too (a new timestamp, the same batch id).
    if progress and progress.get("timestamp") != seen.timestamp:
        seen.timestamp = progress.get("timestamp")
        if observed is not None:
            observed.progress(read_offsets(progress))
    if supervision.redis_url and progress and progress.get("batchId") != seen.batch_id:
        seen.batch_id = progress.get("batchId")
        record_progress(supervision.redis_url, supervision.topic, progress)
        if supervision.on_progress is not None:
            supervision.on_progress()


def _tick(
    timer: RetractionTimer, query: Any, progress: dict[str, Any], supervision: QuerySupervision
) -> None:
    """Ticks the retraction timer and settles cuts at the TTL clock of this round."""
    outage, observed = supervision.outage, supervision.observed
    ended = None if outage is None else outage.ended_ms()
    status, now_ms = dict(query.status), int(time.time() * 1000)
    clock = ttl_clock_ms(progress, status, now_ms, supervision.trigger_interval_ms, ended)
    retracted = timer.tick(clock)
    settled = timer.settle_cuts(clock)
    if observed is not None:
        observed.timer_retracted(retracted)
        observed.cuts_settled(settled)


def _as_dict(progress: Any) -> dict[str, Any]:
    # PySpark 4 returns a StreamingQueryProgress; its JSON is the stable, documented form.
    if progress is None:
        return {}
    return dict(json.loads(progress.json)) if hasattr(progress, "json") else dict(progress)


def stop_between_batches(query: Any, patience_s: float = 30.0) -> None:
    """Stops the query, between two micro-batches when one ends within ``patience_s``.

    ``query.stop()`` interrupts a running batch, and py4j then logs the interrupted
    ``foreachBatch`` call as an ERROR with a traceback, although nothing is wrong: what was
    applied is recorded, and the next start replays the rest. Waiting for the running batch
    to end avoids the interruption; when a batch runs too long, the interruption is expected,
    and py4j's error line about it is left out.
    """
    deadline = time.monotonic() + patience_s
    while query.isActive and query.status.get("isTriggerActive") and time.monotonic() < deadline:
        time.sleep(0.05)
    py4j = logging.getLogger("py4j.clientserver")
    level = py4j.level
    py4j.setLevel(logging.CRITICAL)
    try:
        query.stop()
    finally:
        py4j.setLevel(level)
