"""Start-up failures of the local services say what happened and what to do."""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from collection_manager.cli.main import main
from collection_manager.config import InfraConfig
from collection_manager.config.services import (
    Service,
    load_services,
    pid_alive,
    save_services,
    start_time,
)
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices import (
    UNIDENTIFIED,
    Stop,
    down,
    legacy_outcome,
    maven,
    redis_server,
    status,
)
from collection_manager.devservices.processes import (
    GONE,
    LOOPBACK,
    choose_port,
    start_process,
    stop_pid,
    stop_recorded,
    wait_until_ready,
)
from tests.support import assert_eventually


def test_a_taken_port_is_named(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind((LOOPBACK, 0))
        sock.listen()
        taken = sock.getsockname()[1]
        with pytest.raises(InfrastructureError, match=rf"port {taken} .* is taken"):
            choose_port(taken, tmp_path / "memo", "Kafka")


def test_the_last_port_is_reused_when_free(tmp_path: Path) -> None:
    first = choose_port(0, tmp_path / "memo", "Kafka")
    assert choose_port(0, tmp_path / "memo", "Kafka") == first


def test_a_process_that_dies_during_startup_shows_its_log(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    pid = start_process(
        [sys.executable, "-c", "print('boom: bad config'); raise SystemExit(3)"], log
    )
    with pytest.raises(InfrastructureError, match=r"(?s)exited during start-up.*boom: bad config"):
        wait_until_ready("svc", pid, log, lambda: False, timeout_s=30)


# A child that runs until it is signalled, never for a set time: a loaded machine may take
# longer than any time between its start and the test's last look at it.
_FOREVER = "import signal; print('ready', flush=True); signal.pause()"


def _started(pid: int, log: Path) -> None:
    """Waits until the child ``pid`` runs its own code (it printed ``ready`` to ``log``):
    from then on it has the command line, signal handlers and start time it will keep."""
    assert_eventually(lambda: "ready" in log.read_text(errors="replace"), timeout=30)
    assert pid_alive(pid)


def test_a_service_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    pid = start_process([sys.executable, "-c", _FOREVER], log)
    with pytest.raises(InfrastructureError, match=r"(?s)did not answer within 1 s.*CM_STARTUP"):
        wait_until_ready("svc", pid, log, lambda: False, timeout_s=1)
    assert not pid_alive(pid)


def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    # SIGTERM ignored before it says it is ready: a SIGTERM sent earlier would end it at
    # once, and the test would pass without escalating.
    code = f"import signal; signal.signal(signal.SIGTERM, signal.SIG_IGN); {_FOREVER}"
    log = tmp_path / "log"
    pid = start_process([sys.executable, "-c", code], log)
    _started(pid, log)
    stop_pid(pid, grace_s=0.5)
    assert not pid_alive(pid)


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[int, Path]]:
    """An unrelated process that mentions a service's file on its command line, as an
    editor or ``tail -f`` of it would: what a recorded pid may name after reuse."""
    props = tmp_path / "server.properties"
    props.write_text("")
    log = tmp_path / "holder.log"
    pid = start_process([sys.executable, "-c", _FOREVER, str(props)], log)
    _started(pid, log)
    started = start_time(pid)
    assert started is not None
    yield pid, props
    # By pid and start time: a test may have stopped it, and its pid may be another's now.
    stop_recorded(pid, started)


def _record(config: InfraConfig, pid: int, marker: Path, started: int | None) -> None:
    kafka = Service("kafka", pid, "127.0.0.1:9", "log", str(marker), started)
    save_services(config.services_file, {"kafka": kafka})


def test_down_never_signals_a_reused_pid_that_mentions_the_services_file(
    tmp_path: Path,
    holder: tuple[int, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pid, props = holder
    config = InfraConfig(state_dir=tmp_path)
    started = start_time(pid)
    assert started is not None
    # The broker that had this pid started earlier than the process holding it now.
    _record(config, pid, props, started - 1)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    assert main(["infra", "down"]) == 0
    assert capsys.readouterr().out == (
        "stopped: nothing was running\n"
        f"kafka was not running any more: pid {pid} is another process now, which was not "
        "signalled; the record is removed\n"
    )
    assert pid_alive(pid)
    assert load_services(config.services_file) == {}
    assert next((r.name, r.source) for r in status(config)) == ("kafka", "not running")


def test_down_stops_the_recorded_process_and_says_which(
    tmp_path: Path,
    holder: tuple[int, Path],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    pid, props = holder
    config = InfraConfig(state_dir=tmp_path)
    _record(config, pid, props, start_time(pid))
    assert next((r.name, r.source, r.pid) for r in status(config)) == ("kafka", "local", pid)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    assert main(["infra", "down"]) == 0
    assert capsys.readouterr().out == f"stopped: kafka (pid {pid})\n"
    assert not pid_alive(pid)
    assert load_services(config.services_file) == {}


def test_a_record_without_a_start_time_is_neither_signalled_nor_forgotten(
    tmp_path: Path, holder: tuple[int, Path]
) -> None:
    """A record an older version wrote: the command line alone cannot tell the service
    from a process that reused its pid and mentions the same file."""
    pid, props = holder
    config = InfraConfig(state_dir=tmp_path)
    _record(config, pid, props, None)
    assert down(config) == [Stop("kafka", pid, UNIDENTIFIED)]
    assert pid_alive(pid)
    assert set(load_services(config.services_file)) == {"kafka"}
    stop_pid(pid)
    assert not pid_alive(pid)
    assert down(config) == [Stop("kafka", pid, GONE)]
    assert load_services(config.services_file) == {}


def test_a_live_pid_whose_command_line_reads_empty_stays_unidentified() -> None:
    """The kernel answers an empty /proc/PID/cmdline at times for a live, busy process (the
    cause of this file's one flaky failure, ``gone`` for a running holder): no proof that
    the service is gone, so its record is kept; only a command line read without the
    marker shows another process."""
    assert legacy_outcome(None, "/state/kafka/server.properties") == UNIDENTIFIED
    line = b"java\x00/state/kafka/server.properties\x00"
    assert legacy_outcome(line, "/state/kafka/server.properties") == UNIDENTIFIED
    assert legacy_outcome(b"vim\x00notes.txt\x00", "/state/kafka/server.properties") == GONE


def test_status_without_services_says_not_running(tmp_path: Path) -> None:
    rows = status(InfraConfig(state_dir=tmp_path))
    assert [(r.name, r.source, r.answers) for r in rows] == [
        ("kafka", "not running", False),
        ("redis", "not running", False),
    ]


def test_missing_maven_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(maven.shutil, "which", lambda _: None)
    with pytest.raises(InfrastructureError, match=r"Maven .* apt-get install maven"):
        maven.resolve_jars(["g:a:1"], tmp_path, 10)


def test_unresolvable_jars_show_mavens_output(tmp_path: Path) -> None:
    if maven.shutil.which("mvn") is None:
        pytest.skip("needs mvn")
    with pytest.raises(InfrastructureError, match="Maven could not resolve"):
        # -o (offline) keeps this off the network: an artifact that is nowhere fails at once.
        maven.resolve_jars(["collection-manager.test:does-not-exist:0.0.0"], tmp_path, 120, ["-o"])


def test_missing_redis_server_without_root_says_what_to_do(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(redis_server.shutil, "which", lambda _: None)
    with pytest.raises(InfrastructureError, match=r"apt-get install redis-server.*CM_REDIS_URL"):
        redis_server.require_redis_server()
