"""The README's main command: replica agents, the controller and the consumer, end to end.

The demo runs its own processes (the consumer, one per agent) on the session's Kafka and a
Redis of the test's own (given to it as configured ones, so it starts none of its own):
it runs with the default namespace and collection names, which other tests' processes may
use too;
it must remove one replica, SIGKILL another, and end with Redis holding exactly what the
surviving agent holds and nothing of the other two.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from collection_manager import devservices
from collection_manager.demo.runner import DemoOptions, DemoResult, Keep, run_demo
from collection_manager.demo.view import PlainReporter
from collection_manager.kafka.producer import LIBRDKAFKA_LOGGER
from tests.integration.own_services import OwnService
from tests.support import http_get


def test_demo_verifies_the_survivor_and_retracts_the_removed_and_the_killed(
    endpoints: devservices.Endpoints,
    own_service: Callable[[str], OwnService],
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_REDIS_URL", own_service("redis").address)
    lines: list[str] = []
    verdicts: list[DemoResult] = []
    kept: list[tuple[int, str]] = []

    def released() -> bool:
        """Once the console answers after the verdict (``--keep``), the demo may stop."""
        url = next(line for line in lines if "console: open " in line).split()[3]
        kept.append(http_get(f"{url}api/v1/replicas"))
        return kept[-1][0] == 200

    keep = Keep(verdicts.append, released)
    options = DemoOptions(duration_s=12, timeout_s=180)
    result = run_demo(options, PlainReporter(lines.append), keep)
    plan, log = result.plan, "\n".join(lines)
    assert verdicts == [result] and kept[-1][0] == 200, log
    assert all(replica in kept[-1][1] for replica in plan.survivors), kept

    assert result.verified, log
    # Nothing raw in the narrated view: the planned lease expiry is told by its own line
    # (librdkafka's own lines are the CLI's to quiet: it does, without -v).
    warned = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.getMessage() for r in warned if r.name != LIBRDKAFKA_LOGGER.name] == []
    # The verdict's line agrees with "caught up (lag 0)", though ticks and heartbeats go
    # on; after it, kept, the lag is Kafka's now again.
    verdict = next(line for line in reversed(lines) if " verified | " in line)
    assert verdict.split(" | ")[-1].startswith("lag 0,"), log
    assert "kept running until Ctrl-C" in lines[-1], log
    for gone in (plan.removed, plan.killed):
        assert result.stored[gone] == {name: {} for name in result.stored[gone]}, log
    for survivor in plan.survivors:
        assert result.stored[survivor] == result.held[survivor], log
        assert sum(sum(rows.values()) for rows in result.held[survivor].values()) > 0
    removed, killed = result.statuses[plan.removed], result.statuses[plan.killed]
    assert removed.state == "removed"
    assert (killed.state, killed.reason[:13]) == ("removed", "lease expired")
    # Every live process served its own metrics and was ready at the end.
    events = [event.split("s  ", 1)[1] for event in result.events]  # after the time
    for name in ("consumer", "controller", *plan.survivors):
        answered = [e for e in events if e.startswith(f"{name}: /metrics has cm_")]
        assert answered and answered[0].endswith("/readyz says ok"), log
    # The console's URL came first, and at the end it served its page and the fleet.
    assert events[0].startswith("console: open http://127.0.0.1:"), log
    assert events[0].endswith("the fleet live; kept after the verdict until Ctrl-C"), log
    assert any(e.startswith("console: its page, the fleet's") for e in events), log
