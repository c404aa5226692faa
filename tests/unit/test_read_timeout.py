"""Reads ride through a failover by default, and fail at once when no node answers."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import redis

from collection_manager.cli.main import build_parser
from collection_manager.storage.client import READ_TIMEOUT_S, patiently
from tests.support import recorded_sleeps

DOCS = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


class Flaky:
    """Fails ``times`` times with ``fault``, then answers."""

    def __init__(self, times: int, fault: Exception) -> None:
        self.left, self.fault, self.calls = times, fault, 0

    def __call__(self) -> str:
        self.calls += 1
        if self.left:
            self.left -= 1
            raise self.fault
        return "rows"


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    return recorded_sleeps(monkeypatch)


def test_a_read_waits_while_some_node_answers(no_sleep: list[float]) -> None:
    read = Flaky(3, redis.ConnectionError("the slot's primary is gone"))
    assert patiently(read, READ_TIMEOUT_S, answers=lambda: True) == "rows"
    assert read.calls == 4 and len(no_sleep) == 3


def test_a_read_fails_at_once_when_no_node_answers(no_sleep: list[float]) -> None:
    read = Flaky(3, redis.ConnectionError("Connection refused"))
    with pytest.raises(redis.ConnectionError, match="refused"):
        patiently(read, READ_TIMEOUT_S, answers=lambda: False)
    assert read.calls == 1 and no_sleep == []


def test_the_default_is_the_one_help_and_the_docs_name() -> None:
    query = build_parser().parse_args(["collections", "query", "compute_frontiers"])
    assert query.timeout == READ_TIMEOUT_S
    documented = re.search(r"query --timeout SECONDS` \(default (\d+)", DOCS.read_text())
    assert documented is not None and float(documented.group(1)) == READ_TIMEOUT_S
