"""Where the consumer starts reading: comparison, startingOffsets, the mismatch line."""

from __future__ import annotations

import json

from collection_manager.kafka.identity import TopicIdentity
from collection_manager.storage.progress import Binding
from spark_consumers.positions import (
    RESET_COMMAND,
    behind,
    mismatch,
    parse_offset_log,
    recreated,
    starting_offsets,
)

LOG = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":1}\n{"t":{"1":7,"0":12}}\n'


def test_the_offset_log_gives_the_next_offsets_of_the_topic() -> None:
    assert parse_offset_log(LOG, "t") == {0: 12, 1: 7}
    assert parse_offset_log(LOG, "other") is None


def test_partitions_where_redis_holds_less_than_the_checkpoint() -> None:
    # Partition 0: Redis handled up to 9, the checkpoint would read from 12: read 10, 11 again.
    # Partition 1: Redis is ahead of the checkpoint: the lower one, the checkpoint, is kept.
    # Partition 2: nothing recorded in Redis: from 0.
    found = behind({0: 9, 1: 20}, {0: 12, 1: 7, 2: 3})
    assert found == {0: (10, 12), 2: (0, 3)}
    assert behind({0: 11}, {0: 12}) == {}


def test_starting_offsets_follow_redis_and_name_every_partition() -> None:
    text = starting_offsets("t", (0, 1, 2), {0: 9, 2: 0})
    assert json.loads(text) == {"t": {"0": 10, "1": -2, "2": 1}}


def test_progress_of_another_cluster_is_one_line_with_the_reset_command() -> None:
    now = TopicIdentity("clusterB", "idB", (0, 1))
    line = mismatch("t", Binding("clusterA", "idA"), now)
    assert line is not None and "\n" not in line
    assert "clusterA" in line and "clusterB" in line and "idA" in line and "idB" in line
    assert line.endswith(RESET_COMMAND)
    assert mismatch("t", Binding("clusterB", "idA"), now) is None


def test_a_new_topic_id_on_the_same_cluster_is_a_recreated_topic() -> None:
    now = TopicIdentity("c", "new", (0,))
    assert recreated(Binding("c", "old"), now)
    assert not recreated(Binding("c", "new"), now)
    assert not recreated(Binding("other", "old"), now)
