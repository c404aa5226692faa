"""The CLI's argument handling (no services)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

import collection_manager
from collection_manager.cli.main import build_parser, main
from collection_manager.cli.output import output_format, tsv_line


def test_every_subcommand_parses() -> None:
    parser = build_parser()
    for argv in (
        ["infra", "status"],
        ["query", "c", "--where", "a=1", "--where", "b>=2", "--format", "json"],
        ["tail", "c", "--since", "3", "--limit", "10", "--format", "json"],
        ["collections", "list", "--format", "json"],
        ["collections", "describe", "c"],
        ["status", "--format", "json"],
        ["replicas", "--format", "json"],
        ["consume", "--duration", "1"],
        ["demo"],
    ):
        assert callable(parser.parse_args(argv).run)


@pytest.mark.parametrize("command", ["query", "tail", "status", "replicas", "collections"])
def test_reading_commands_take_format_table_tsv_or_json_before_or_after(command: str) -> None:
    argv = [command, *(["c"] if command in ("query", "tail") else [])]
    argv = [*argv, "list"] if command == "collections" else argv
    parser = build_parser()
    assert not hasattr(parser.parse_args(argv), "format")  # then: by where stdout goes
    for fmt in ("table", "tsv", "json"):
        assert parser.parse_args([*argv, "--format", fmt]).format == fmt
        assert parser.parse_args(["--format", fmt, *argv]).format == fmt
    assert parser.parse_args([*argv, "--no-headers"]).no_headers
    assert parser.parse_args(["--no-headers", *argv]).no_headers
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--format", "yaml"])


def test_without_a_format_a_terminal_gets_tables_and_a_pipe_tab_separated_lines(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: True)
    assert output_format(None) == "table"
    monkeypatch.setattr(sys.stdout, "isatty", lambda: False)
    assert output_format(None) == "tsv"
    assert output_format("json") == "json"


def test_tab_separated_cells_stay_one_line_each() -> None:
    assert tsv_line(["a\tb", "c\nd", "e\\f", None, True, 1.5], "null") == (
        "a\\tb\tc\\nd\te\\\\f\tnull\ttrue\t1.5"
    )


def test_tail_limit_must_be_positive(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["tail", "c", "--limit", "0"])
    assert "must be at least 1" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["query", "c"], "redis"),
        (["tail", "c"], "redis"),
        (["replicas"], "redis"),
        (["collections", "list"], "redis"),
        (["replica", "remove", "r1"], "kafka"),
        (["consume"], "kafka"),
        (["controller", "run"], "kafka"),
    ],
)
def test_product_commands_start_nothing(
    argv: list[str],
    missing: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    monkeypatch.delenv("CM_KAFKA_BOOTSTRAP", raising=False)
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert err.startswith(
        f"error: no {missing} to use: start one with `collection-manager infra up`"
    )
    assert list(tmp_path.iterdir()) == []  # no services file: nothing was started


def test_a_state_file_needs_steps(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    argv = ["replica", "run", "--id", "r1", "--state-file", str(tmp_path / "s.json")]
    assert main(argv) == 1
    assert capsys.readouterr().err == "error: --state-file needs --steps\n"
    assert list(tmp_path.iterdir()) == []  # refused before starting anything


def test_version_is_shown(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    version, commit = re.fullmatch(
        r"collection-manager (\S+) \(commit (\S+)\)\n", capsys.readouterr().out
    ).groups()
    assert version == collection_manager.__version__
    assert re.fullmatch(r"[0-9a-f]{12}(-dirty)?|unknown", commit)


@pytest.mark.parametrize(
    ("argv", "verbose"),
    [
        (["replicas"], False),
        (["-v", "replicas"], True),
        (["replicas", "-v"], True),
        (["replica", "run", "--id", "r1", "--verbose"], True),
        (["collections", "list", "-v"], True),
    ],
)
def test_verbose_is_taken_before_or_after_the_command(argv: list[str], verbose: bool) -> None:
    args, rest = build_parser().parse_known_args(argv)
    assert (args.verbose, rest) == (verbose, [])
