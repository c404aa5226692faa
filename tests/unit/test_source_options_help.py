"""The sources' own options in the help a user reads: each names its default, and
``replicas run --help`` shows them (docs/howto/sources.md's ``--workers 4 --dataflows 8``,
``--target``)."""

from __future__ import annotations

import argparse

import pytest

from collection_manager.cli.main import main
from producers.sources.plugin import load_source, source_names


@pytest.mark.parametrize("name", source_names())
def test_every_source_option_says_its_default(name: str) -> None:
    parser = argparse.ArgumentParser(add_help=False)
    load_source(name).add_arguments(parser)
    for action in parser._actions:
        if action.required:
            continue
        assert action.help and "default" in action.help.lower(), (
            f"--source {name} {action.option_strings[0]}: {action.help!r} names no default"
        )


def test_replica_sources_shows_the_simulated_defaults(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["replicas", "sources"]) == 0
    out = capsys.readouterr().out
    assert "simulated workers (default 4)" in out
    assert "simulated dataflows (default 8)" in out


def test_replica_run_help_shows_the_options_of_each_source(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["replicas", "run", "--help"])
    assert exited.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # one line: help wraps where it likes
    for shown in (
        "--rate RATE steps per second",
        "options of --source simulated (the default):",
        "--workers WORKERS simulated workers (default 4)",
        "--dataflows DATAFLOWS simulated dataflows (default 8)",
        "options of --source openmetrics:",
        "--target TARGET URL of the replica's metrics",
    ):
        assert shown in out
