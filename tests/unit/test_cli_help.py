"""Every command's ``--help``, walked as a new user reads them.

Each option says its default (or has none to say: a flag, a required option); a group's
help lists its commands and shows no command's JSON examples; a command's help shows the
examples of that command only.
"""

from __future__ import annotations

import argparse
import re

import pytest

from collection_manager.cli.main import build_parser
from collection_manager.cli.reference import is_group, parsers

FLAGS = (argparse._StoreTrueAction, argparse._HelpAction, argparse._VersionAction)


ALL = list(parsers(build_parser()))


def test_the_walk_finds_every_command() -> None:
    paths = {" ".join(path) for path, _ in ALL}
    for expected in (
        "collections query",
        "collections tail",
        "collections list",
        "collections show",
        "collections create",
        "collections drop",
        "infra up",
        "infra status",
        "controller run",
        "consumer run",
        "server run",
        "replicas list",
        "replicas run",
        "replicas remove",
        "progress show",
        "progress reset",
        "status",
        "bench run",
    ):
        assert expected in paths


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(p) or "top" for p, _ in ALL])
def test_every_option_says_its_default(path: tuple[str, ...], parser: argparse.ArgumentParser):
    for action in parser._actions:
        if not action.option_strings or isinstance(action, FLAGS) or action.required:
            continue
        if action.help is argparse.SUPPRESS or action.dest in ("verbose", "format"):
            continue  # -v is a flag; --format says what it defaults to by where output goes
        assert action.help and "default" in action.help.lower(), (
            f"{' '.join(path)} {action.option_strings[0]}: {action.help!r} names no default"
        )


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(p) or "top" for p, _ in ALL])
def test_help_shows_only_its_own_commands_examples(
    path: tuple[str, ...], parser: argparse.ArgumentParser
) -> None:
    text = parser.format_help()
    shown = re.findall(r"`collection-manager ([^`]*?) --format json` prints", text)
    if is_group(parser):
        assert shown == [], f"{' '.join(path)} --help shows its commands' examples"
    for example in shown:
        assert example.split()[: len(path)] == list(path), (path, example)
