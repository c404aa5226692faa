"""Reading the consumer's position and progress, and counting rows by replica (pure parts)."""

from __future__ import annotations

import datetime

from collection_manager.demo.observe import (
    caught_up,
    lag,
    parse_offset_log,
    recorded_after,
    rows_per_replica,
)

# A file of a Spark 4 checkpoint's offsets/ log, as the consumer writes it.
OFFSET_LOG = """v1
{"batchWatermarkMs":0,"batchTimestampMs":1795308220188,"conf":{"spark.sql.shuffle.partitions":"4"}}
{"cm.requests":{"0":126,"1":46,"2":30,"3":206}}
"""


def test_the_offset_log_gives_the_next_offset_of_each_partition() -> None:
    assert parse_offset_log(OFFSET_LOG, "cm.requests") == {0: 126, 1: 46, 2: 30, 3: 206}


def test_another_topic_or_a_torn_file_gives_nothing() -> None:
    assert parse_offset_log(OFFSET_LOG, "other") is None
    assert parse_offset_log('v1\n{}\n{"cm.requests": {"0"', "cm.requests") is None
    assert parse_offset_log("v1\n", "cm.requests") is None


def test_lag_is_what_kafka_holds_beyond_the_position() -> None:
    assert lag({0: 10, 1: 5, 2: 3}, {0: 7, 1: 5, 2: 4}) == 3
    assert lag({0: 10, 1: 5}, {0: 10}) == 5  # a partition never read lags by all of it
    assert lag({0: 10}, None) is None


def test_caught_up_needs_every_partition_at_its_target() -> None:
    assert caught_up({0: 10, 1: 5}, {0: 10, 1: 5})
    assert caught_up({0: 11, 1: 5}, {0: 10, 1: 5, 2: 0})
    assert not caught_up({0: 10, 1: 4}, {0: 10, 1: 5})
    assert not caught_up({0: 10}, {0: 10, 1: 1})
    assert not caught_up(None, {0: 0})


def test_rows_are_counted_by_replica_with_their_multiplicities() -> None:
    rows = {("r1", "u0", 1): 1, ("r1", "u1", 1): 2, ("r2", "u0", 1): 1}

    assert rows_per_replica(rows) == {"r1": 3, "r2": 1}


def test_a_progress_counts_when_its_trigger_started_after_the_moment() -> None:
    moment = datetime.datetime(2026, 1, 2, 3, 4, 5, tzinfo=datetime.UTC).timestamp()

    assert recorded_after({"timestamp": "2026-01-02T03:04:05.001Z"}, moment)
    assert not recorded_after({"timestamp": "2026-01-02T03:04:04.999Z"}, moment)
    assert not recorded_after({}, moment)
