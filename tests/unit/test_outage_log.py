"""A run of failures is one line when it begins and one when it ends, however long."""

from __future__ import annotations

import logging

import pytest

from collection_manager.core.outages import OutageLog

LOGGER = logging.getLogger("tests.outage")


def _levels(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.levelname for r in caplog.records]


def test_an_outage_is_a_warning_when_it_begins_and_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    outage = OutageLog(LOGGER, "lease check", clock=lambda: now[0], settle_s=1.0)
    outage.succeeded()
    for _ in range(50):
        outage.failed("connection refused")
        now[0] += 0.1
    outage.succeeded()  # too soon after a failure: a broker going down still acknowledges
    assert outage.ongoing
    now[0] += 1.0
    outage.succeeded()
    outage.succeeded()
    assert not outage.ongoing
    warned = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warned == [
        "lease check failed: connection refused; retrying until it works",
        "lease check works again after 6.0 s and 50 failures",
    ]
    assert len(caplog.records) == 2  # at WARNING; the 49 repeats are INFO (for -v)


def test_an_expected_failure_is_info_until_an_alarming_one(
    caplog: pytest.LogCaptureFixture,
) -> None:
    outage = OutageLog(LOGGER, "ticks")
    with caplog.at_level(logging.INFO):
        outage.failed("topic does not exist", alarming=False)
        outage.failed("topic does not exist", alarming=False)
        outage.succeeded()
        assert _levels(caplog) == ["INFO", "INFO", "INFO"]
        caplog.clear()
        outage.failed("topic does not exist", alarming=False)
        outage.failed("Kafka does not answer")
        outage.failed("Kafka does not answer")
        outage.succeeded()
    assert _levels(caplog) == ["INFO", "WARNING", "INFO", "WARNING"]
