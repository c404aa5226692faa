"""``consume`` as an operator starts it: before its topic exists, in a directory of theirs."""

from __future__ import annotations

import dataclasses
import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_spec
from tests.integration.consumer_process import applies_one_row, consumer_env, kill, start_consumer
from tests.support import assert_eventually


@pytest.fixture
def spec(redis: redis_lib.Redis, unique: str) -> Iterator[CollectionSpec]:
    made = dataclasses.replace(introspection_spec("error_counts"), name=f"ec-{unique}")
    store = RedisStore(redis)
    store.create_collection(made)
    yield made
    store.drop_collection(made.name)


def test_consume_waits_for_its_topic_and_leaves_no_file_behind(
    kafka: str,
    endpoints: Any,
    redis: redis_lib.Redis,
    unique: str,
    spec: CollectionSpec,
    tmp_path: Path,
) -> None:
    topic, workdir, log = f"late-{unique}", tmp_path / "operator", tmp_path / "consumer.log"
    workdir.mkdir()
    # -v: the wait is an INFO line until it lasted MISSING_TOPIC_WARN_S.
    consumer = start_consumer(
        consumer_env(kafka, endpoints.redis_url, topic, tmp_path), log, workdir, verbose=True
    )
    admin = AdminClient({"bootstrap.servers": kafka})
    try:

        def waiting() -> None:
            assert consumer.poll() is None, log.read_text()[-3000:]
            assert f"waiting for topic {topic}: it does not exist yet" in log.read_text()

        assert_eventually(waiting, timeout=60)
        admin.create_topics([NewTopic(topic, num_partitions=2)])[topic].result(30)
        created = time.monotonic()
        applies_one_row(consumer, log, kafka, topic, RedisStore(redis), spec.name)
        # How long after the topic appeared it applied (printed for the record).
        print(f"applied {time.monotonic() - created:.1f} s after the topic was created")
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, log.read_text()[-3000:]
    finally:
        if consumer.poll() is None:
            kill(consumer)
        admin.delete_topics([topic])
    assert list(workdir.iterdir()) == []
    assert "Traceback" not in log.read_text()
