"""Start-up failures of the local services say what happened and what to do."""

from __future__ import annotations

import socket
import sys
from pathlib import Path

import pytest

from collection_manager.config import InfraConfig
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices import down, maven, redis_server, status
from collection_manager.devservices.processes import (
    LOOPBACK,
    choose_port,
    pid_alive,
    start_process,
    stop_pid,
    wait_until_ready,
)
from collection_manager.devservices.services import Service, load_services, save_services


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


def test_a_service_that_never_answers_times_out_and_is_stopped(tmp_path: Path) -> None:
    log = tmp_path / "svc.log"
    pid = start_process(
        [sys.executable, "-c", "import time; print('waiting'); time.sleep(60)"], log
    )
    with pytest.raises(InfrastructureError, match=r"(?s)did not answer within 1 s.*CM_STARTUP"):
        wait_until_ready("svc", pid, log, lambda: False, timeout_s=1)
    assert not pid_alive(pid)


def test_stop_escalates_to_sigkill(tmp_path: Path) -> None:
    code = "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(60)"
    pid = start_process([sys.executable, "-c", code], tmp_path / "log")
    stop_pid(pid, grace_s=0.5)
    assert not pid_alive(pid)


def test_down_never_kills_a_reused_pid(tmp_path: Path) -> None:
    config = InfraConfig(state_dir=tmp_path)
    pid = start_process([sys.executable, "-c", "import time; time.sleep(60)"], tmp_path / "log")
    try:
        stale = Service("redis", pid, "redis://x", "log", marker="/not/on/its/command/line")
        save_services(config.services_file, {"redis": stale})
        assert down(config) == []
        assert pid_alive(pid)
        assert load_services(config.services_file) == {}
    finally:
        stop_pid(pid)


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
    monkeypatch.setattr(redis_server.os, "geteuid", lambda: 1000)
    with pytest.raises(InfrastructureError, match=r"apt-get install redis-server.*CM_REDIS_URL"):
        redis_server.require_redis_server()
