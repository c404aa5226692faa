"""The docs' command lines and option defaults are the parser's (``tests/docs/cli.py``)."""

from __future__ import annotations

import argparse

import pytest

from collection_manager.cli.deprecated import ALIASES, add_deprecated_option
from tests.docs.cli import command_problem, docs_problems, page_problems

# An old spelling of a command (not of an option), whatever the table holds today.
OLD = next(old for old in ALIASES if not old.split()[-1].startswith("-"))


def _parser() -> argparse.ArgumentParser:
    """A small command line: collections query/tail, demo, replicas run, and a hidden one."""
    parser = argparse.ArgumentParser(prog="collection-manager")
    commands = parser.add_subparsers(dest="command")
    collections = commands.add_parser("collections", help="collections").add_subparsers()
    query = collections.add_parser("query", help="read")
    query.add_argument("name")
    query.add_argument("--timeout", type=float, default=30.0)
    query.add_argument("--format", default=None)
    tail = collections.add_parser("tail", help="changes")
    tail.add_argument("-n", type=int, default=10)
    tail.add_argument("--since", default="0")
    add_deprecated_option(tail, "collections tail --limit", dest="n", type=int)
    demo = commands.add_parser("demo", help="the demo")
    demo.add_argument("--within", type=float, default=120.0)
    demo.add_argument("--scale", type=int, default=1)
    replicas = commands.add_parser("replicas", help="agents").add_subparsers()
    run = replicas.add_parser("run", help="run agents")
    run.set_defaults(takes_source_options=True)
    commands.add_parser("hidden")  # no help: not shown, so not for the docs
    return parser


@pytest.mark.parametrize(
    "words",
    [
        ["collections", "query", "sizes", "--timeout", "5"],
        ["-v", "collections", "tail", "sizes", "-n", "3", "--since=12"],
        ["demo", "--within=60"],
        ["replicas", "run", "--source", "openmetrics", "--url", "http://x"],
        ["collections", "--help"],
        ["--version"],
        ["PLACEHOLDER", "--help"],
        ["collections", "query", "$NAME", "--anything"],
    ],
)
def test_a_current_command_passes(words: list[str]) -> None:
    assert command_problem(words, _parser()) is None


@pytest.mark.parametrize(
    ("words", "problem"),
    [
        (["collections"], "collection-manager collections needs a command: query, tail"),
        (
            ["collections", "list"],
            "collection-manager collections has no command 'list': query, tail",
        ),
        (["hidden"], "collection-manager has no command 'hidden': collections, demo, replicas"),
        (["demo", "--timeout", "5"], "collection-manager demo has no option --timeout"),
        (
            ["collections", "tail", "x", "--limit", "5"],
            "collection-manager collections tail --limit: 'collections tail --limit' is "
            "deprecated; use 'collections tail -n'",
        ),
        (OLD.split(), f"collection-manager {OLD}: '{OLD}' is deprecated; use '{ALIASES[OLD]}'"),
    ],
)
def test_a_command_that_is_not_current_is_named(words: list[str], problem: str) -> None:
    assert command_problem(words, _parser()) == problem


def test_commands_are_read_from_code_blocks_with_their_continuations() -> None:
    page = (
        "Run `collection-manager gone` in prose: not read.\n"
        "```sh\n"
        "$ .venv/bin/collection-manager demo --within 60 && collection-manager collections \\\n"
        "    nope | head\n"
        "collection-manager: 'x' is deprecated; use 'y'\n"
        "CM_X=1 collection-manager collections query <name> --timeout 3  # a comment\n"
        "```\n"
    )

    assert page_problems("p.md", page, _parser()) == [
        "p.md:3: collection-manager collections has no command 'nope': query, tail"
    ]


@pytest.mark.parametrize(
    "line",
    [
        "`--since 0`, the default, is the start",
        "`collections query --timeout SECONDS` (default 30) tries again",
        "`--within` (default 120 s)",
        "`--scale`, default 1.",
        "`-n` defaults to 10.",
        "`collection-manager demo --within` (default 120)",
        "`--timeout` (default: the read's own)",
    ],
)
def test_a_quoted_option_default_that_is_the_parsers_passes(line: str) -> None:
    assert page_problems("p.md", line + "\n", _parser()) == []


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        (
            "`--since 5`, the default",
            "--since of collections tail defaults to '0' in the parser, not '5'",
        ),
        (
            "`query --timeout S` (default 10)",
            "--timeout of collections query defaults to 30.0 in the parser, not '10'",
        ),
        (
            "`--within` (default 60 s)",
            "--within of demo defaults to 120.0 in the parser, not '60 s'",
        ),
        ("`-n` defaults to 100.", "-n of collections tail defaults to 10 in the parser, not '100'"),
        ("`--nothing` (default 3)", "no command has the option --nothing"),
        ("`demo --nothing` (default 3)", "collection-manager demo has no option --nothing"),
    ],
)
def test_a_quoted_option_default_that_differs_is_named(line: str, problem: str) -> None:
    assert page_problems("p.md", line + "\n", _parser()) == [f"p.md:1: {problem}"]


def test_the_docs_commands_and_option_defaults_are_the_parsers() -> None:
    assert docs_problems() == []
