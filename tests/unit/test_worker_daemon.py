"""The Python workers' daemon leaves a hang-up of the JVM unprinted, and prints the rest."""

from __future__ import annotations

import pytest

from spark_consumers.worker_daemon import print_unless_hang_up


@pytest.mark.parametrize("error", [BrokenPipeError(32, "Broken pipe"), ConnectionResetError()])
def test_a_hang_up_prints_nothing(error: OSError, capsys: pytest.CaptureFixture[str]) -> None:
    try:
        raise error
    except OSError:
        print_unless_hang_up()
    assert capsys.readouterr().err == ""


def test_any_other_failure_prints_its_traceback(capsys: pytest.CaptureFixture[str]) -> None:
    try:
        raise ValueError("a worker's own failure")
    except ValueError:
        print_unless_hang_up()
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "ValueError: a worker's own failure" in err
