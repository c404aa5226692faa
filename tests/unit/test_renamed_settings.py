"""A renamed or removed setting is still read for one release, with a warning
(docs/concepts/upgrades.md)."""

from __future__ import annotations

import logging

import pytest

from collection_manager.config import ConsumerConfig, from_env
from collection_manager.config import settings as settings_module


@pytest.fixture
def renamed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(
        settings_module, "RENAMED", {"CM_REQUEST_TOPIC": "CM_TOPIC", "CM_OLD_KNOB": None}
    )
    monkeypatch.setattr(settings_module, "_warned", set())


@pytest.mark.usefixtures("renamed")
def test_the_old_name_is_read_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING):
        config = from_env(ConsumerConfig, {"CM_REQUEST_TOPIC": "old.requests"})
    assert config.topic == "old.requests"
    assert caplog.messages == [
        "CM_REQUEST_TOPIC is renamed CM_TOPIC: the old name is read for this release only"
    ]


@pytest.mark.usefixtures("renamed")
def test_the_new_name_wins_and_a_removed_one_is_named(caplog: pytest.LogCaptureFixture) -> None:
    environ = {"CM_REQUEST_TOPIC": "old", "CM_TOPIC": "new", "CM_OLD_KNOB": "1"}
    with caplog.at_level(logging.WARNING):
        assert from_env(ConsumerConfig, environ).topic == "new"
    assert caplog.messages == ["CM_OLD_KNOB is no setting any more: it is ignored (CHANGELOG.md)"]
    from_env(ConsumerConfig, environ)
    assert len(caplog.messages) == 1  # once per process
