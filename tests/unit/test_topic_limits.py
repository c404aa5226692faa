"""A topic that does not exist yet is normal, not a warning, and so is a broker away (the
consumer reports its outage once); a broker that refuses warns. No services: the admin
client is a fake."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from collection_manager.kafka import message_limits
from collection_manager.kafka.errors import (
    KafkaUnreachableError,
    TopicConfigError,
    TopicMissingError,
)
from spark_consumers import dead_letter_producer
from spark_consumers.dead_letter_producer import dead_letter_max_bytes, producer_max_bytes

REQUEST_MAX = 1_048_588


class _Failed:
    def __init__(self, code: int) -> None:
        self._code = code

    def result(self, _timeout: float) -> Any:
        raise KafkaException(KafkaError(self._code))


class _Admin:
    def __init__(self, code: int) -> None:
        self._code = code

    def describe_configs(self, resources: Sequence[Any], **_kwargs: Any) -> dict[Any, Any]:
        return {resource: _Failed(self._code) for resource in resources}


@pytest.mark.parametrize(
    ("code", "missing"),
    [(KafkaError.UNKNOWN_TOPIC_OR_PART, True), (KafkaError._TRANSPORT, False)],
)
def test_a_missing_topic_is_told_from_a_broker_fault(
    code: int, missing: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(message_limits, "admin_client", lambda _bootstrap: _Admin(code))
    with pytest.raises(TopicConfigError) as failed:
        message_limits.max_message_bytes("127.0.0.1:9", ["cm.dead-letters"])
    assert isinstance(failed.value, TopicMissingError) is missing


def test_a_request_topic_not_there_yet_leaves_the_limit_to_the_broker(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    missing = TopicMissingError("cannot describe topic 'cm.requests': UNKNOWN_TOPIC_OR_PART")
    monkeypatch.setattr(dead_letter_producer, "max_message_bytes", _raises(missing))
    monkeypatch.setattr(dead_letter_producer, "fit_max_message_bytes", _unexpected)
    with caplog.at_level(logging.INFO):
        limit = dead_letter_max_bytes("127.0.0.1:9", "cm.requests", "cm.dead-letters")
    assert limit == producer_max_bytes(None)
    assert [r.levelname for r in caplog.records] == ["INFO"]


@pytest.mark.parametrize(
    ("fault", "level"),
    [
        # Part of an outage, which the consumer's start reports once.
        (KafkaUnreachableError("cannot describe topic 'cm.requests': timed out"), "INFO"),
        (TopicConfigError("cannot describe topic 'cm.requests': not authorized"), "WARNING"),
    ],
)
def test_a_request_topic_that_cannot_be_described_warns_unless_kafka_is_away(
    fault: TopicConfigError,
    level: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(dead_letter_producer, "max_message_bytes", _raises(fault))
    with caplog.at_level(logging.INFO):
        dead_letter_max_bytes("127.0.0.1:9", "cm.requests", "cm.dead-letters")
    assert [r.levelname for r in caplog.records] == [level]


def test_the_dead_letter_topic_is_fitted_to_the_request_topic(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    asked: list[tuple[str, int]] = []

    def fit(_bootstrap: str, topic: str, at_least: int) -> int:
        asked.append((topic, at_least))
        return at_least

    monkeypatch.setattr(
        dead_letter_producer,
        "max_message_bytes",
        lambda _b, names: dict.fromkeys(names, REQUEST_MAX),
    )
    monkeypatch.setattr(dead_letter_producer, "fit_max_message_bytes", fit)
    limit = dead_letter_max_bytes("127.0.0.1:9", "cm.requests", "cm.dead-letters")
    assert asked == [("cm.dead-letters", limit)]
    assert limit == producer_max_bytes(REQUEST_MAX)
    assert caplog.records == []


def _raises(error: Exception) -> Any:
    def limits(_bootstrap: str, _names: Sequence[str]) -> dict[str, int]:
        raise error

    return limits


def _unexpected(*_args: Any) -> int:
    raise AssertionError("not asked for")
