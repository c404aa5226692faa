"""The consumer's streaming query on a test's topic, in the session's Spark."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.config import ConsumerConfig
from spark_consumers.job import start_consumer


@contextlib.contextmanager
def consumer_query(
    spark: Any, kafka: str, redis_url: str, topic: str, directory: Path, namespace: str
) -> Iterator[Any]:
    """Starts the query (with its own dead-letter topic and checkpoint under ``directory``)
    and stops it on leaving."""
    dead = f"{topic}-dead"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(dead, 1, 1)])[dead].result(30)
    config = ConsumerConfig(
        topic=topic,
        dead_letter_topic=dead,
        checkpoint_dir=str(directory / "checkpoint"),
        trigger_interval_ms=200,
    )
    query = start_consumer(spark, config, kafka, redis_url, replica_namespace=namespace)
    try:
        yield query
    finally:
        query.stop()
        admin.delete_topics([dead])[dead].result(30)
