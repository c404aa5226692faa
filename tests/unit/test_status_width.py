"""``status`` at 80 columns: every name whole, however many counters a collection has."""

from __future__ import annotations

import re

import pytest

from collection_manager.cli.output import show
from collection_manager.cli.status import (
    EXAMPLE_CONSUMER,
    EXAMPLE_CONTROLLER,
    EXAMPLE_UNPUBLISHED,
    example_bucketed,
)
from collection_manager.cli.status_views import status_tables
from collection_manager.reading.catalog import CollectionInfo
from collection_manager.storage.counters import SHOWN_COUNTERS
from schemas.introspection import introspection_specs

ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _infos() -> list[CollectionInfo]:
    counters = dict.fromkeys(SHOWN_COUNTERS, 123_456)
    infos = [CollectionInfo(spec, 2_000, 42_000, counters) for spec in introspection_specs()]
    return [*infos, example_bucketed(counters)]


def _status(capsys: pytest.CaptureFixture[str]) -> str:
    tables = status_tables(
        EXAMPLE_CONSUMER, _infos(), True, EXAMPLE_UNPUBLISHED, (), EXAMPLE_CONTROLLER
    )
    show("table", {}, *tables)
    return ANSI.sub("", capsys.readouterr().out)


def _names() -> list[str]:
    return [info.spec.name for info in _infos()]


def test_at_80_columns_on_a_terminal_every_name_is_whole(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("TTY_COMPATIBLE", "1")  # rich: stdout is a terminal
    monkeypatch.setenv("COLUMNS", "80")
    out = _status(capsys)

    assert "…" not in out, out
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80, out
    for name in _names():
        assert re.search(rf"^collection +{name}\b", out, re.M), out  # a row at a time
    for counter in SHOWN_COUNTERS:
        assert counter.replace("_", " ") in out
    assert "OversizedRequestError" in out and "MSG_SIZE_TOO_LARGE" in out
    # A table that fits stays a table.
    assert "│ cm.requests │ 0         │ 3   │" in out
    assert "│ frontiers_by_replica │ 1      │ 2    │ 40   │" in out


def test_off_a_terminal_a_table_is_never_cut(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("TTY_COMPATIBLE", raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    out = _status(capsys)

    assert "…" not in out, out
    for name in _names():
        assert re.search(rf"^│ {name} +│ ", out, re.M), out  # one table, a line per name
