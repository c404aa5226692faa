"""``infra up --replicated`` without services: its layout, the settings it prints, the
combinations it refuses before starting anything, and its records in ``status``/``down``."""

from __future__ import annotations

import argparse
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from collection_manager.cli.infra import replicated_lines
from collection_manager.cli.main import build_parser, main
from collection_manager.config import InfraConfig, from_env
from collection_manager.config.errors import UsageError
from collection_manager.config.services import Service, load_services, save_services, start_time
from collection_manager.devservices import Replicated, down, redis_cluster, status
from collection_manager.devservices.processes import GONE
from collection_manager.devservices.redis_server import redis_answers
from collection_manager.devservices.replicated import replicated_node_command
from collection_manager.devservices.replicated_layout import (
    Layout,
    check_combination,
    is_replicated,
    load_layout,
    save_layout,
    settings,
)
from tests.examples.pages import ROOT


def _layout() -> Layout:
    ports = itertools.count(20000)
    return Layout.plan(lambda: next(ports), "cluster-id")


def test_a_layout_names_three_brokers_and_nine_redis_nodes_on_distinct_ports() -> None:
    ports = itertools.chain([7000, 7000], itertools.count(30000))  # one handed out twice
    layout = Layout.plan(lambda: next(ports), "id")
    used = [port for node in layout.nodes for port in (node.port, node.peer_port)]
    assert len(used) == len(set(used)) == 24
    assert [n.name for n in layout.brokers] == ["kafka-1", "kafka-2", "kafka-3"]
    assert [n.name for n in layout.redis] == [f"redis-{i}" for i in range(1, 10)]


def test_the_addresses_name_every_node() -> None:
    layout = _layout()
    assert layout.bootstrap == "127.0.0.1:20000,127.0.0.1:20002,127.0.0.1:20004"
    assert layout.voters == "1@127.0.0.1:20001,2@127.0.0.1:20003,3@127.0.0.1:20005"
    assert layout.redis_url.startswith("redis://127.0.0.1:20006,127.0.0.1:20008,")
    assert layout.redis_url.endswith(",127.0.0.1:20022/0")
    assert settings(layout) == {
        "CM_KAFKA_BOOTSTRAP": layout.bootstrap,
        "CM_REDIS_URL": layout.redis_url,
        "CM_REDIS_REPLICA_ACKS": "1",
    }


def test_a_layout_is_kept_as_it_was_made(tmp_path: Path) -> None:
    assert load_layout(tmp_path) is None
    save_layout(tmp_path, _layout())
    assert load_layout(tmp_path) == _layout()


def test_the_records_of_the_deployment_are_told_from_the_single_services() -> None:
    assert is_replicated("kafka-1") and is_replicated("redis-9")
    assert not any(map(is_replicated, ["kafka", "redis", "kafka-x", "prometheus-1"]))


def _config(**environ: str) -> InfraConfig:
    return from_env(InfraConfig, environ)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"CM_KAFKA_BOOTSTRAP": "broker.example:9092"}, "CM_KAFKA_BOOTSTRAP=broker.example"),
        ({"CM_KAFKA_BOOTSTRAP": "127.0.0.1:20000,other:1"}, "not one of --replicated's own"),
        ({"CM_REDIS_URL": "redis://127.0.0.1:6379/0"}, "CM_REDIS_URL=redis.* names a Redis"),
        ({"CM_REDIS_URL": "rediss://127.0.0.1:20006/0"}, "CM_REDIS_URL=redis.* names a Redis"),
        ({"CM_KAFKA_PORT": "9092"}, "CM_KAFKA_PORT sets the port"),
        ({"CM_REDIS_PORT": "6379"}, "CM_REDIS_PORT sets the port"),
        ({"CM_REDIS_REPLICA_ACKS": "3"}, "would ever be confirmed; set it to 1"),
    ],
)
def test_settings_that_do_not_fit_are_refused(environ: dict[str, str], message: str) -> None:
    with pytest.raises(UsageError, match=message) as refused:
        check_combination(_config(**environ), _layout(), environ)
    assert "\n" not in str(refused.value)


def test_a_password_in_a_refused_url_is_never_shown() -> None:
    environ = {"CM_REDIS_URL": "redis://:secret@elsewhere:6379/0"}
    with pytest.raises(UsageError) as refused:
        check_combination(_config(**environ), _layout(), environ)
    assert "secret" not in str(refused.value)


def test_the_deployments_own_settings_fit() -> None:
    layout = _layout()
    own = {**settings(layout), "CM_REDIS_REPLICA_ACKS": "2"}
    check_combination(_config(**own), layout, own)
    some = {"CM_REDIS_URL": f"redis://{layout.redis[4].address}/0"}  # any of its nodes
    check_combination(_config(**some), layout, some)


def test_before_the_first_start_any_configured_address_is_another_service() -> None:
    environ = {"CM_KAFKA_BOOTSTRAP": "127.0.0.1:20000"}
    with pytest.raises(UsageError):
        check_combination(_config(**environ), None, environ)


def test_the_printed_settings_can_be_evaluated_by_a_shell() -> None:
    layout = _layout()
    lines = replicated_lines(Replicated(layout, ("kafka-1", "redis-2")))
    assert [line for line in lines if not line.startswith("#")] == [
        f"export {name}={value}" for name, value in settings(layout).items()
    ]
    assert "# started: kafka-1, redis-2 (stop with: collection-manager infra down)" in lines
    shell = "\n".join(lines) + '\necho "$CM_KAFKA_BOOTSTRAP|$CM_REDIS_URL|$CM_REDIS_REPLICA_ACKS"'
    done = subprocess.run(["bash", "-c", shell], capture_output=True, text=True, check=True)
    assert done.stdout == f"{layout.bootstrap}|{layout.redis_url}|1\n"
    assert done.stderr == ""


def test_a_refused_combination_starts_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", "broker.example:9092")
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    assert main(["infra", "up", "--replicated"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: CM_KAFKA_BOOTSTRAP=broker.example:9092 names a broker")
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


def test_a_url_naming_several_nodes_that_do_not_answer_is_no_error() -> None:
    assert redis_answers("redis://127.0.0.1:1,127.0.0.1:2/0") is False
    assert redis_answers("redis://[broken/0") is False


def _gone_pid() -> int:
    done = subprocess.Popen([sys.executable, "-c", "pass"])
    done.wait()
    return done.pid


def test_status_and_down_show_and_forget_nodes_that_died(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CM_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    config = from_env(InfraConfig, {"CM_STATE_DIR": str(tmp_path)})
    pid = _gone_pid()
    save_services(
        config.services_file,
        {name: Service(name, pid, "x", "log", "m", 1) for name in ("redis-2", "kafka-1")},
    )
    rows = [(row.name, row.source, row.answers) for row in status(config)]
    assert rows[2:] == [("kafka-1", "not running", False), ("redis-2", "not running", False)]
    assert sorted((s.name, s.outcome) for s in down(config)) == [
        ("kafka-1", GONE),
        ("redis-2", GONE),
    ]
    assert load_services(config.services_file) == {}


# What the replicated Redis nodes run with, as docs/howto/deploy-replicated.md and
# `infra up --help` name it.
REDIS_SETTINGS = (
    "appendfsync always",
    "cluster-allow-replica-migration no",
    "cluster-replica-validity-factor 0",
)


def test_the_help_the_docs_and_the_nodes_name_the_same_redis_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(redis_cluster, "require_redis_server", lambda: "redis-server")
    command = " ".join(replicated_node_command(Path("/data"), 7000, 17000))
    helped = str(_parser("infra", "up").description)  # as written, before wrapping
    documented = " ".join((ROOT / "docs" / "howto" / "deploy-replicated.md").read_text().split())
    for setting in REDIS_SETTINGS:
        assert f"--{setting}" in command
        assert setting in helped
        assert f"`{setting}" in documented
    assert 'eval "$(collection-manager infra up --replicated)"' in helped
    assert 'eval "$(collection-manager infra up --replicated)"' in documented


def _parser(*path: str) -> argparse.ArgumentParser:
    parser = build_parser()
    for word in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


def test_a_command_without_the_exported_settings_is_told_to_export_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    me = os.getpid()  # a process that runs, as a recorded node's would
    node = Service("redis-1", me, "redis://127.0.0.1:1/0", "log", "m", start_time(me))
    save_services(tmp_path / "services.json", {"redis-1": node})
    assert main(["collections", "query", "c"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: no redis to use: start one with `collection-manager infra up`")
    assert 'the replicated deployment runs: export the settings `eval "$(' in err
