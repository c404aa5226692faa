"""``replica remove`` of a replica that is no member fails like every other command: one
``error:`` line on stderr, nothing on stdout, exit 1. No services: the controller is a fake."""

from __future__ import annotations

from typing import Any

import pytest

from collection_manager import devservices
from collection_manager.cli import replicas
from collection_manager.cli.main import main


class _Controller:
    """Knows one member, ``r1`` at epoch 3."""

    def remove_replica(self, replica_id: str, _reason: str) -> int | None:
        return 3 if replica_id == "r1" else None

    def close(self) -> None:
        pass


@pytest.fixture(autouse=True)
def fake_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(devservices, "running", lambda *_a, **_k: None)
    monkeypatch.setattr(replicas, "connect_controller", lambda _endpoints: _Controller())


def test_removing_no_member_is_an_error_line(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replicas", "remove", "nosuch", "--yes"]) == 1
    captured: Any = capsys.readouterr()
    assert (captured.out, captured.err) == (
        "",
        "error: replica nosuch is not a member; `collection-manager replicas list` lists them\n",
    )


def test_removing_a_member_says_what_was_fenced(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replicas", "remove", "r1", "--yes"]) == 0
    assert capsys.readouterr().out == "removed replica r1: epoch 3 fenced, its rows retracted\n"
