"""A listen address that is no host:port is refused before anything connects: one error
line naming the setting and its bound (no Redis or Kafka answers at these addresses)."""

from __future__ import annotations

import pytest

from collection_manager.cli.main import main


@pytest.mark.parametrize(
    ("argv", "setting"),
    [
        (["controller", "run"], "CM_CONTROLLER_METRICS_ADDRESS"),
        (["replicas", "run", "--id", "r1"], "CM_AGENT_METRICS_ADDRESS"),
    ],
)
def test_a_bad_listen_address_is_refused_before_connecting(
    argv: list[str],
    setting: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.setenv("CM_REDIS_URL", "redis://127.0.0.1:1")
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", "127.0.0.1:1")
    monkeypatch.setenv(setting, "host:99999")
    assert main(argv) == 1
    _, err = capsys.readouterr()
    assert err == (
        f"error: {setting}='host:99999': expected host:port with a port from 0 to 65535 "
        "(e.g. 127.0.0.1:9400)\n"
    )
