"""The demo's command line: defaults of about a minute, and limits it refuses below."""

from __future__ import annotations

import pytest

from collection_manager.cli.main import build_parser


def test_defaults() -> None:
    args = build_parser().parse_args(["demo"])

    assert (args.duration, args.scale, args.replicas, args.within) == (30.0, 1, 3, 120.0)
    assert not args.keep  # `make demo` ends by itself
    assert build_parser().parse_args(["demo", "--keep"]).keep


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--replicas", "2"], "at least 3"),
        (["--duration", "5"], "at least 10"),
        (["--scale", "0"], "at least 1"),
        (["--duration", "x"], "invalid float value"),
    ],
)
def test_too_small_or_malformed_values_are_refused(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        build_parser().parse_args(["demo", *argv])
    assert message in capsys.readouterr().err
