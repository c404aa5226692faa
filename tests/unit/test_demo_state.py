"""The demo keeps its services' data in a state directory of its own, ``<state dir>/demo``,
so a later ``infra up`` starts clean instead of with the demo's batches and replicas. No
services: asking for them ends the run here."""

from __future__ import annotations

from pathlib import Path

import pytest

from collection_manager.config import InfraConfig
from collection_manager.demo import runner
from collection_manager.demo.runner import DemoOptions
from collection_manager.demo.view import PlainReporter


class _Asked(Exception):
    pass


def test_the_demo_asks_for_services_in_its_own_state_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    asked: list[InfraConfig] = []

    def up(config: InfraConfig) -> None:
        asked.append(config)
        raise _Asked

    monkeypatch.setattr(runner.devservices, "up", up)
    with pytest.raises(_Asked):
        runner.run_demo(DemoOptions(), PlainReporter(lambda _line: None))
    assert [config.state_dir for config in asked] == [tmp_path / "demo"]
    assert asked[0].services_file != InfraConfig(state_dir=tmp_path).services_file
