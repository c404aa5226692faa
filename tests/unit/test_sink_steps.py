"""How a sink cuts a step's changes into transactions (core/sinks/steps.py), and what a
sink is (core/sinks/spec.py)."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.core.cut import Cut
from collection_manager.core.errors import InvalidNameError
from collection_manager.core.sinks.spec import MAX_SINKS, SinkError, SinkSpec
from collection_manager.core.sinks.steps import StepTooLarge, transactions
from collection_manager.core.stepped_read import Change

# A log's changes: times that never go back, several changes at one time.
_log = st.lists(st.integers(1, 4), max_size=40).map(
    lambda gaps: [Change(sum(gaps[: i + 1]) // 2 + 1, (i,), 1) for i in range(len(gaps))]
)


@given(_log, st.integers(1, 6), st.integers(0, 5))
def test_an_unbucketed_step_is_cut_at_time_boundaries_within_the_bound(
    log: list[Change[tuple[int]]], bound: int, beyond: int
) -> None:
    through = Cut(((log[-1].time if log else 0) + beyond,))
    cut = list(transactions([(None, c) for c in log], through, False, bound))
    assert [c for batch, _ in cut for _, c in batch] == log  # all of them, in order, once
    assert cut[-1][1] == through
    for (batch, reached), (following, _) in itertools.pairwise(cut):
        # Each transaction ends at the last time it holds, and the next begins after it.
        assert reached == Cut((batch[-1][1].time,))
        assert following[0][1].time > reached.times[0]
        # At most the bound, unless one time alone holds more.
        assert len(batch) <= bound or len({c.time for _, c in batch}) == 1


@given(_log, st.integers(1, 60))
def test_a_bucketed_step_is_one_transaction_or_refused_naming_the_bound(
    log: list[Change[tuple[int]]], bound: int
) -> None:
    placed = [(i % 3, change) for i, change in enumerate(log)]
    through = Cut((9, 9, 9))
    if len(placed) > bound:
        with pytest.raises(StepTooLarge, match=f"more than {bound} changes.*MAX_TRANSACTION"):
            list(transactions(placed, through, True, bound))
    else:
        assert list(transactions(placed, through, True, bound)) == [(placed, through)]


def test_a_sink_is_checked_where_it_is_made() -> None:
    spec = SinkSpec("out", "c", "cm.out")
    assert (spec.progress_topic, spec.transactional_id) == ("cm-sink-progress.out", "cm-sink-out")
    assert SinkSpec.of(spec.record()) == spec
    with pytest.raises(SinkError, match="no Kafka topic name: 1 to 249"):
        SinkSpec("out", "c", "a topic")
    with pytest.raises(SinkError, match="the sinks' own"):
        SinkSpec("out", "c", "cm-sink-progress.x")
    with pytest.raises(SinkError, match="format 'xml' is none of json, avro"):
        SinkSpec("out", "c", "t", "xml")
    with pytest.raises(InvalidNameError):
        SinkSpec("bad name", "c", "t")
    with pytest.raises(SinkError, match="damaged"):
        SinkSpec.of({"name": "out"})
    assert MAX_SINKS == 64
