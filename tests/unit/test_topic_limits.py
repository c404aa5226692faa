"""A topic that does not exist yet is normal, not a warning: the dead-letter topic on a
consumer's first start (its limit is then the broker's). A broker that does not answer
still warns. No services: the admin client is a fake."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException

from collection_manager.kafka import topics
from collection_manager.kafka.errors import TopicConfigError, TopicMissingError
from spark_consumers import dead_letters
from spark_consumers.dead_letters import dead_letter_max_bytes, producer_max_bytes

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
    monkeypatch.setattr(topics, "admin_client", lambda _bootstrap: _Admin(code))
    with pytest.raises(TopicConfigError) as failed:
        topics.max_message_bytes("127.0.0.1:9", ["cm.dead-letters"])
    assert isinstance(failed.value, TopicMissingError) is missing


def _limits(dead_letter_error: TopicConfigError) -> Any:
    def limits(_bootstrap: str, names: Sequence[str]) -> dict[str, int]:
        if names == ["cm.dead-letters"]:
            raise dead_letter_error
        return {name: REQUEST_MAX for name in names}

    return limits


def test_a_dead_letter_topic_not_there_yet_is_no_warning(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    missing = TopicMissingError("cannot describe topic 'cm.dead-letters': UNKNOWN_TOPIC_OR_PART")
    monkeypatch.setattr(dead_letters, "max_message_bytes", _limits(missing))
    with caplog.at_level(logging.INFO):
        limit = dead_letter_max_bytes("127.0.0.1:9", "cm.requests", "cm.dead-letters")
    assert limit == producer_max_bytes(REQUEST_MAX)
    assert [r.levelname for r in caplog.records] == ["INFO"]


def test_a_dead_letter_topic_that_cannot_be_described_warns(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    fault = TopicConfigError("cannot describe topic 'cm.dead-letters': timed out")
    monkeypatch.setattr(dead_letters, "max_message_bytes", _limits(fault))
    dead_letter_max_bytes("127.0.0.1:9", "cm.requests", "cm.dead-letters")
    assert [r.levelname for r in caplog.records] == ["WARNING"]
