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
        ["collections", "query", "c", "--where", "a=1", "--where", "b>=2", "--format", "json"],
        ["collections", "tail", "c", "--since", "3", "-n", "10", "--format", "json"],
        ["collections", "tail", "c", "-n", "5", "-f"],
        ["progress", "show", "--format", "json"],
        ["server", "run", "--duration", "1"],
        ["collections", "list", "--format", "json"],
        ["collections", "show", "c"],
        ["status", "--format", "json"],
        ["replicas", "list", "--format", "json"],
        ["consumer", "run", "--duration", "1"],
        ["demo"],
    ):
        assert callable(parser.parse_args(argv).run)


@pytest.mark.parametrize(
    "argv",
    [
        ["collections", "query", "c"],
        ["collections", "tail", "c"],
        ["collections", "list"],
        ["collections", "show", "c"],
        ["status"],
        ["replicas", "list"],
        ["progress", "show"],
        ["functions", "list"],
        ["infra", "status"],
    ],
)
def test_row_printing_commands_take_format_table_tsv_or_json(argv: list[str]) -> None:
    parser = build_parser()
    assert not hasattr(parser.parse_args(argv), "format")  # then: by where stdout goes
    for fmt in ("table", "tsv", "json"):
        assert parser.parse_args([*argv, "--format", fmt]).format == fmt
    assert parser.parse_args([*argv, "--no-headers"]).no_headers
    with pytest.raises(SystemExit):
        parser.parse_args([*argv, "--format", "yaml"])


def test_format_before_the_command_still_works_once_deprecated(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CM_REDIS_URL", raising=False)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path))
    assert main(["--format", "json", "collections", "list"]) == 1  # no Redis: after parsing
    assert capsys.readouterr().err.splitlines()[0] == (
        "collection-manager: '--format' before the command is deprecated; give it after the command"
    )


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


def test_tail_count_must_not_be_negative(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["collections", "tail", "c", "-n", "-1"])
    assert "must be 0 or more" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "missing"),
    [
        (["collections", "query", "c"], "redis"),
        (["collections", "tail", "c"], "redis"),
        (["replicas", "list"], "redis"),
        (["collections", "list"], "redis"),
        (["replicas", "remove", "r1"], "kafka"),
        (["consumer", "run"], "kafka"),
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
    argv = ["replicas", "run", "--id", "r1", "--state-file", str(tmp_path / "s.json")]
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
        (["replicas", "list"], False),
        (["-v", "replicas", "list"], True),
        (["replicas", "list", "-v"], True),
        (["replicas", "run", "--id", "r1", "--verbose"], True),
        (["collections", "list", "-v"], True),
    ],
)
def test_verbose_is_taken_before_or_after_the_command(argv: list[str], verbose: bool) -> None:
    args, rest = build_parser().parse_known_args(argv)
    assert (args.verbose, rest) == (verbose, [])
