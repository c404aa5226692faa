"""One command grammar (issue 45): noun then verb, the old spellings hidden but working.

Every command is ``NOUN VERB`` (or one of the few top-level ones); no old spelling shows in
any ``--help``; ``--format`` is taken only where rows are printed; every destructive verb
takes ``--yes`` and ``--dry-run``; each old spelling still works and says so in exactly one
line on stderr.
"""

from __future__ import annotations

import argparse

import pytest

from collection_manager.cli.deprecated import ALIASES, notice, rewrite
from collection_manager.cli.main import build_parser, main
from collection_manager.cli.reference import is_group, parsers

TOP_LEVEL = {"setup", "status", "demo"}
ROW_PRINTING = {
    "collections list",
    "collections show",
    "collections query",
    "collections tail",
    "status",
    "replicas list",
    "progress show",
    "functions list",
    "infra status",
    "sinks list",
    "sinks show",
}
DESTRUCTIVE = {
    "collections drop",
    "replicas remove",
    "progress reset",
    "functions remove",
    "sinks drop",
}


ALL = list(parsers(build_parser()))
LEAVES = {" ".join(path): parser for path, parser in ALL if path and not is_group(parser)}


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {name for action in parser._actions for name in action.option_strings}


def test_every_command_is_a_noun_then_a_verb_or_one_of_the_top_level_ones() -> None:
    for command in LEAVES:
        words = command.split()
        assert len(words) == 2 or command in TOP_LEVEL, command


def test_the_grammar_as_decided() -> None:
    assert set(LEAVES) == {
        *TOP_LEVEL,
        *(f"collections {verb}" for verb in ("list", "show", "create", "drop", "query")),
        "collections create-introspection",
        "collections tail",
        *(f"replicas {verb}" for verb in ("list", "run", "sources", "remove")),
        "consumer run",
        "controller run",
        "server run",
        "bench run",
        "progress show",
        "progress reset",
        *(f"infra {verb}" for verb in ("up", "down", "status")),
        *(f"functions {verb}" for verb in ("list", "load", "remove")),
        *(f"sinks {verb}" for verb in ("create", "list", "show", "drop", "run")),
    }


@pytest.mark.parametrize(("path", "parser"), ALL, ids=[" ".join(p) or "top" for p, _ in ALL])
def test_no_old_spelling_shows_in_help(path: tuple[str, ...], parser: argparse.ArgumentParser):
    text = parser.format_help()
    for old in ALIASES:
        words = old.split()
        if words[-1].startswith("-"):  # an option of a command: not in that command's help
            if " ".join(path) == " ".join(words[:-1]):
                assert words[-1] not in text.split(), (path, old)
        elif len(words) == 1 and not path and words[0] not in LEAVES and words[0] != "replicas":
            assert f"{{{words[0]}," not in text and f",{words[0]}," not in text, old
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            assert not {"consume", "serve", "query", "tail", "replica", "describe", "all"} & set(
                action.choices
            ) or path == ("collections",), (path, sorted(action.choices))


@pytest.mark.parametrize("command", sorted(LEAVES))
def test_format_only_where_rows_are_printed(command: str) -> None:
    options = _options(LEAVES[command])
    assert ("--format" in options) == (command in ROW_PRINTING), command
    assert ("--no-headers" in options) == (command in ROW_PRINTING), command


def test_the_top_level_takes_no_format() -> None:
    assert "--format" not in _options(build_parser())


@pytest.mark.parametrize("command", sorted(DESTRUCTIVE))
def test_every_destructive_verb_takes_yes_and_dry_run(command: str) -> None:
    assert {"--yes", "--dry-run"} <= _options(LEAVES[command])


def test_one_meaning_per_flag_name() -> None:
    """``--timeout`` is a retry window (``collections query``); the demo's wait limit is
    ``--within``."""
    assert "--within" in _options(LEAVES["demo"])
    shown = LEAVES["demo"].format_help()
    assert "--timeout" not in shown and "--within" in shown


# The old spellings: each run once, with --help (no services needed).
OLD_COMMANDS = {
    old: [*old.split(), *(["--all"] if old == "replicas" else []), "--help"]
    for old in ALIASES
    if not old.split()[-1].startswith("-")
}
OLD_OPTIONS = {
    "collections tail --limit": ["collections", "tail", "c", "--limit", "5", "--help"],
    "demo --timeout": ["demo", "--timeout", "60", "--help"],
}


def test_every_alias_is_exercised() -> None:
    assert set(OLD_COMMANDS) | set(OLD_OPTIONS) == set(ALIASES)


@pytest.mark.parametrize("old", sorted({**OLD_COMMANDS, **OLD_OPTIONS}))
def test_an_old_spelling_works_and_prints_one_deprecation_line(
    old: str, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = {**OLD_COMMANDS, **OLD_OPTIONS}[old]
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines() == [notice(old)]
    new = ALIASES[old].split()
    command = new if not new[-1].startswith("-") else new[:-1]
    assert captured.out.startswith(f"usage: collection-manager {' '.join(command)} "), old


def test_an_old_command_runs_as_the_new_one(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replica", "sources"]) == 0
    old = capsys.readouterr()
    assert (
        old.err == "collection-manager: 'replica sources' is deprecated; use 'replicas sources'\n"
    )
    assert main(["replicas", "sources"]) == 0
    new = capsys.readouterr()
    assert (new.out, new.err) == (old.out, "")


@pytest.mark.parametrize(
    ("argv", "rewritten"),
    [
        (["collections", "query", "c"], ["collections", "query", "c"]),
        (["replicas"], ["replicas", "list"]),
        (["replicas", "--all"], ["replicas", "list", "--all"]),
        (["replicas", "list"], ["replicas", "list"]),
        (["replicas", "--help"], ["replicas", "--help"]),
        (["-v", "query", "c"], ["-v", "collections", "query", "c"]),
        (["--format", "json", "query", "c"], ["collections", "query", "c", "--format", "json"]),
        (["--no-headers", "status"], ["status", "--no-headers"]),
        # The old tail's defaults: from time 0, at most 100; with -f only new ones.
        (["tail", "c"], ["collections", "tail", "c", "--since", "0", "-n", "100"]),
        (["tail", "c", "--limit", "5"], ["collections", "tail", "c", "-n", "5", "--since", "0"]),
        (["tail", "c", "--since", "3"], ["collections", "tail", "c", "--since", "3", "-n", "100"]),
        (["tail", "c", "-f"], ["collections", "tail", "c", "-f", "-n", "0"]),
        (["consume", "--duration", "1"], ["consumer", "run", "--duration", "1"]),
        (["bench", "all", "--quick"], ["bench", "run", "--quick"]),
    ],
)
def test_rewrite(argv: list[str], rewritten: list[str]) -> None:
    assert rewrite(argv)[0] == rewritten


def test_the_old_tail_with_its_limit_is_one_old_spelling() -> None:
    assert rewrite(["tail", "c", "--limit", "5"])[1] == [notice("tail")]
