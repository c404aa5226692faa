"""The log lines of a wait for the request topic: INFO while it is normal, WARNING when not."""

from __future__ import annotations

import logging

import pytest

from collection_manager.kafka import topics
from collection_manager.kafka.topics import MISSING_TOPIC_WARN_S, _Wait

MISSING = "it does not exist yet"


def lines(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(record.levelname, record.getMessage()) for record in caplog.records]


def test_a_topic_created_soon_after_is_no_warning(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([0.0, 1.0, 2.5])
    monkeypatch.setattr(topics.time, "monotonic", lambda: next(clock))
    wait = _Wait("cm.requests")
    with caplog.at_level(logging.INFO, logger=topics.__name__):
        wait.note(MISSING, alarming=False)
        wait.note(MISSING, alarming=False)
        wait.ended()
    assert lines(caplog) == [
        ("INFO", f"waiting for topic cm.requests: {MISSING}"),
        ("INFO", "topic cm.requests is there after 2.5 s"),
    ]


def test_a_long_wait_or_an_absent_broker_warns(
    caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = iter([0.0, MISSING_TOPIC_WARN_S, MISSING_TOPIC_WARN_S + 5, 40.0, 41.0])
    monkeypatch.setattr(topics.time, "monotonic", lambda: next(clock))
    wait = _Wait("typo")
    with caplog.at_level(logging.INFO, logger=topics.__name__):
        wait.note(MISSING, alarming=False)
        wait.note(MISSING, alarming=False)
        wait.note(MISSING, alarming=False)  # warned once only
        wait.ended()
    assert [level for level, _ in lines(caplog)] == ["INFO", "WARNING", "WARNING"]
    assert lines(caplog)[1][1] == f"still waiting for topic typo after 30 s: {MISSING}"
    caplog.clear()
    _Wait("t").note("Kafka at k:1 does not answer (x)", alarming=True)
    assert lines(caplog) == [("WARNING", "waiting for topic t: Kafka at k:1 does not answer (x)")]
