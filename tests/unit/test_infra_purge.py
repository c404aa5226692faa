"""``infra down --purge``: a clean start without losing the jar cache, asked first."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from collection_manager.cli.main import main
from collection_manager.config import InfraConfig
from collection_manager.config.services import Service, pid_alive, save_services, start_time
from collection_manager.devservices.processes import start_process, stop_recorded
from collection_manager.devservices.purge import purge_targets
from tests.support import assert_eventually

# What the services, the demo and the consumer leave in the state directory.
LEFT = ("kafka/data/meta.properties", "redis/dump.rdb", "checkpoints/consumer-cm.requests/0",
        "demo/logs/consumer.log", "spark-scratch/x", "replicated/layout.json")  # fmt: skip


@pytest.fixture
def state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> InfraConfig:
    """A state directory as a session leaves it, with the jar cache inside it (CM_CACHE_DIR
    may point anywhere), and no service recorded as running."""
    config = InfraConfig(state_dir=tmp_path / "state", cache_dir=tmp_path / "state" / "jars")
    for name in (*LEFT, "jars/kafka.jar", "lock", "test-services.lock"):
        (config.state_dir / name).parent.mkdir(parents=True, exist_ok=True)
        (config.state_dir / name).write_text("x")
    save_services(config.services_file, {})
    monkeypatch.setenv("CM_STATE_DIR", str(config.state_dir))
    monkeypatch.setenv("CM_CACHE_DIR", str(config.cache_dir))
    return config


def _left(config: InfraConfig) -> set[str]:
    found = config.state_dir.rglob("*")
    return {str(p.relative_to(config.state_dir)) for p in found if p.is_file()}


def test_purge_deletes_the_state_but_the_jar_cache_and_the_locks(
    state: InfraConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    names = ", ".join(sorted(["kafka", "redis", "checkpoints", "demo", "spark-scratch",
                              "replicated", "services.json"]))  # fmt: skip
    assert ", ".join(t.name for t in purge_targets(state)) == names
    assert main(["infra", "down", "--purge", "--yes"]) == 0
    assert _left(state) == {"jars/kafka.jar", "lock", "test-services.lock"}
    assert capsys.readouterr().out == (
        "stopped: nothing was running\n"
        f"deleted: {names} in {state.state_dir}; kept: the jar cache {state.cache_dir}\n"
    )
    assert main(["infra", "down", "--purge", "--yes"]) == 0  # again: nothing left to delete


def test_a_dry_run_says_what_it_would_delete_and_deletes_nothing(
    state: InfraConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _left(state)
    assert main(["infra", "down", "--purge", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("would stop the local services and delete checkpoints, demo, kafka,")
    assert out.endswith(f"the jar cache {state.cache_dir} stays (--dry-run: nothing done)\n")
    assert _left(state) == before


def test_without_a_terminal_or_yes_it_refuses(
    state: InfraConfig, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys.stdin, "isatty", lambda: False)
    before = _left(state)
    assert main(["infra", "down", "--purge"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: this would stop the local services and delete ")
    assert "stays; run it again with --yes to go on\n" in err
    assert _left(state) == before
    assert main(["infra", "down", "--dry-run"]) == 2  # a plain down stops at once: no dry run
    assert "go with `infra down --purge`" in capsys.readouterr().err


def test_nothing_is_deleted_while_a_service_may_still_run_on_it(
    state: InfraConfig, capsys: pytest.CaptureFixture[str]
) -> None:
    """A record without a start time is never signalled (test_infra_processes.py): its
    process may be the broker, writing to its data."""
    marker = state.state_dir / "kafka" / "server.properties"
    marker.write_text("")
    log = state.state_dir.parent / "holder.log"
    code = "import signal; print('ready', flush=True); signal.pause()"
    pid = start_process([sys.executable, "-c", code, str(marker)], log)
    started = start_time(pid)
    assert started is not None
    try:
        assert_eventually(lambda: "ready" in log.read_text(), timeout=30)
        kafka = Service("kafka", pid, "127.0.0.1:9", str(log), str(marker), None)
        save_services(state.services_file, {"kafka": kafka})
        before = _left(state)
        assert main(["infra", "down", "--purge", "--yes"]) == 1
        assert capsys.readouterr().out.endswith(
            f"nothing deleted: a service may still run on its data in {state.state_dir}\n"
        )
        assert _left(state) == before and pid_alive(pid)
    finally:
        stop_recorded(pid, started)
