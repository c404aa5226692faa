"""What ``status --wait`` waits for (``collection_manager/reading/readiness.py``): the rules
as values, no service."""

from __future__ import annotations

from typing import Any

import pytest

from collection_manager.control.members import ACTIVE, REMOVED, REMOVING
from collection_manager.control.status import ReplicaStatus
from collection_manager.reading.readiness import (
    consumer_waiting,
    offsets_waiting,
    replicas_waiting,
)

STARTED_MS = 1_000_000


def consumer(**fields: Any) -> dict[str, Any]:
    """A ``consumer_summary`` of a consumer that beats and applies since it started."""
    return {
        "topic": "cm.requests",
        "state": "running",
        "state_since_ms": None,
        "outage_cause": None,
        "last_progress_ms": STARTED_MS + 5,
        **fields,
    }


def replica(replica_id: str, state: str = ACTIVE, heartbeat: int | None = 7) -> ReplicaStatus:
    return ReplicaStatus(replica_id, 1, state, None, heartbeat, 0, "")


def test_a_consumer_that_beats_and_ran_a_batch_since_it_started_applies() -> None:
    assert consumer_waiting(consumer(), STARTED_MS) is None


@pytest.mark.parametrize("state", ["stopped", "unknown"])
def test_a_consumer_that_does_not_beat_is_waited_for_by_the_command_that_starts_it(
    state: str,
) -> None:
    reason = consumer_waiting(consumer(state=state), STARTED_MS)

    assert reason == "the consumer of cm.requests to start (`collection-manager consumer run`)"


def test_progress_recorded_before_the_process_started_is_another_process() -> None:
    earlier = consumer(last_progress_ms=STARTED_MS - 1)

    assert (
        consumer_waiting(earlier, STARTED_MS)
        == "the consumer of cm.requests to run its first batch"
    )
    assert consumer_waiting(consumer(last_progress_ms=None), STARTED_MS) is not None


def test_an_outage_of_this_process_is_waited_out_and_an_older_one_is_not() -> None:
    now = consumer(state="retrying", state_since_ms=STARTED_MS + 1, outage_cause="Redis away")
    old = consumer(state="retrying", state_since_ms=STARTED_MS - 1, outage_cause="Redis away")

    assert (
        consumer_waiting(now, STARTED_MS)
        == "the consumer of cm.requests to end an outage (Redis away)"
    )
    assert consumer_waiting(old, STARTED_MS) is None


def test_only_active_replicas_without_a_heartbeat_of_their_epoch_are_waited_for() -> None:
    fleet = [
        replica("r1"),
        replica("r2", heartbeat=None),
        replica("r3", REMOVING, None),
        replica("r4", REMOVED, None),
        replica("r5", heartbeat=None),
    ]

    assert replicas_waiting(fleet) == "the first heartbeat of replica r2, r5"
    assert replicas_waiting(fleet[:1]) is None
    assert replicas_waiting([]) is None


def test_the_consumer_is_caught_up_once_it_read_every_partition_up_to_the_target() -> None:
    target = {"t:0": 10, "t:1": 0, "t:2": 4}

    assert offsets_waiting({"t:0": 10, "t:2": 4}, target) is None
    assert offsets_waiting({"t:0": 12, "t:2": 5}, target) is None
    assert offsets_waiting({"t:0": 7}, target) == (
        "the consumer to apply 7 requests published before now"
    )
