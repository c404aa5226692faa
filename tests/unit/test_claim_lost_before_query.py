"""A consumer whose claim another consumer took over says so and stops, whether that
happened during the streaming query or before it started (while it waited for Redis or
the topic): never a quiet end (``spark_consumers/run.run_consumer``)."""

from __future__ import annotations

from typing import Any

import pytest

from collection_manager.config import ConsumerConfig
from collection_manager.storage.claims import ClaimLostError, ConsumerClaim, Holder
from spark_consumers import run

OTHER = Holder(host="elsewhere", pid=42)


class _Run:
    """A run whose preparation met a takeover, or none, and stopped before the query."""

    def __init__(self, taken_over: bool) -> None:
        self.claim = ConsumerClaim("cm.requests")
        self.lost: list[Holder] = []
        self._taken_over = taken_over
        self.closed = False

    def consume(self, *_args: Any) -> None:
        if self._taken_over:  # the heartbeat's thread saw another holder, and set stop
            self.lost.append(OTHER)

    def close(self) -> None:
        self.closed = True


def _run_consumer(monkeypatch: pytest.MonkeyPatch, taken_over: bool) -> _Run:
    made = _Run(taken_over)
    monkeypatch.setattr(run, "_started_observability", lambda *_args: None)
    monkeypatch.setattr(run, "_ConsumerRun", lambda *_args: made)
    config: Any = ConsumerConfig()
    try:
        run.run_consumer(config, None, None, None, "cm:replicas")  # type: ignore[arg-type]
    finally:
        assert made.closed
    return made


def test_a_claim_taken_over_before_the_query_is_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ClaimLostError, match="took over on this Redis") as raised:
        _run_consumer(monkeypatch, taken_over=True)
    assert raised.value.holder == OTHER


def test_a_stop_before_the_query_with_the_claim_kept_ends_quietly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert not _run_consumer(monkeypatch, taken_over=False).lost
