"""docker-compose.yml read as data (its run is tests/integration/test_compose.py): each
service's command and the header's examples are commands of today's grammar, every port
comes from .env, and the HTTP API and console are one of its services."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Any

import pytest
import yaml  # type: ignore[import-untyped]  # PyYAML: mkdocs (the dev extra) needs it

from collection_manager.cli.main import build_parser
from collection_manager.observability.probe import probe

ROOT = Path(__file__).resolve().parents[2]


class _Compose(yaml.SafeLoader):
    """YAML with compose's own tag (``!reset``, docker-compose.ports.yml)."""


_Compose.add_constructor("!reset", lambda loader, node: None)


def _load(name: str) -> dict[str, Any]:
    return dict(yaml.load((ROOT / name).read_text(), _Compose))  # a SafeLoader


def _dotenv() -> dict[str, str]:
    lines = (ROOT / ".env").read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if line and not line.startswith("#"))


def test_every_service_runs_a_command_of_todays_grammar() -> None:
    parser = build_parser()
    services = _load("docker-compose.yml")["services"].values()
    commands = [s["command"] for s in services if s["image"] == "cm-app:latest" and "command" in s]
    assert ["server", "run"] in commands and len(commands) >= 10, commands
    for command in commands:
        assert callable(parser.parse_args(command).run), command


def test_the_headers_examples_are_commands_of_todays_grammar() -> None:
    header = (ROOT / "docker-compose.yml").read_text().split("\nx-app:", 1)[0]
    runs = re.findall(r"run --rm (?:replicated-)?cli (.+)", header)
    assert len(runs) >= 3, header
    for line in runs:
        argv = shlex.split(line.split("#", 1)[0])
        assert callable(build_parser().parse_args(argv).run), line


def test_the_http_api_and_console_are_served_on_loopback_at_a_port_from_dotenv() -> None:
    server = _load("docker-compose.yml")["services"]["server"]
    assert server["command"] == ["server", "run"]
    assert server["network_mode"] == "host"
    assert server["environment"]["CM_HTTP_ADDRESS"] == "127.0.0.1:${CM_COMPOSE_SERVER_PORT}"
    assert "CM_HTTP_TOKEN" not in server["environment"]  # loopback: none needed
    assert server["healthcheck"]["test"][-1] == "/readyz"
    assert _dotenv()["CM_COMPOSE_SERVER_PORT"].isdigit()
    # Mapped beyond the container's loopback, it takes a token (server run refuses without).
    mapped = _load("docker-compose.ports.yml")["services"]["server"]
    assert mapped["environment"]["CM_HTTP_ADDRESS"] == "0.0.0.0:8080"
    assert mapped["environment"]["CM_HTTP_TOKEN"] == "${CM_COMPOSE_HTTP_TOKEN:-}"
    assert mapped["ports"] == ["127.0.0.1:${CM_COMPOSE_SERVER_PORT}:8080"]


@pytest.mark.parametrize("name", ["docker-compose.yml", "docker-compose.ports.yml"])
def test_every_port_comes_from_dotenv(name: str) -> None:
    used = set(re.findall(r"\$\{(CM_COMPOSE_\w+?)(?::-[^}]*)?\}", (ROOT / name).read_text()))
    assert used - set(_dotenv()) <= {"CM_COMPOSE_HTTP_TOKEN"}  # a secret: never in .env


def test_the_healthcheck_asks_the_servers_own_listener() -> None:
    # Port 1 on loopback: nothing listens there, so the probe asked it.
    ok, said = probe("/readyz", {"CM_HTTP_ADDRESS": "127.0.0.1:1"})
    assert not ok and said.startswith("127.0.0.1:1: "), said
