"""The README's main command: a replica's requests through Kafka and Spark into Redis."""

from __future__ import annotations

from typing import Any

from spark_consumers.demo import run_demo


def test_demo_verifies_redis_against_the_replica(endpoints: Any, spark: Any) -> None:
    result = run_demo(timeout_s=120, steps=3)
    assert result.verified
    assert sum(sum(rows.values()) for rows in result.expected.values()) > 0
