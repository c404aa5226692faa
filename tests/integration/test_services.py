"""The foundation: the services the other tests stand on are real and answer."""

from __future__ import annotations

from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import Consumer, Producer

from collection_manager import devservices
from collection_manager.config import InfraConfig
from tests.integration.own_services import services_kind
from tests.support import assert_eventually

# What `infra status` and `infra up` report is about local processes.
local_processes_only = pytest.mark.skipif(
    services_kind() != "processes", reason="the session's services are not local processes"
)


def test_kafka_round_trip_with_idempotent_producer(kafka: str, topic: str) -> None:
    producer = Producer(
        {
            "bootstrap.servers": kafka,
            "enable.idempotence": True,
            "acks": "all",
            "partitioner": "murmur2_random",
        }
    )
    for i in range(10):
        producer.produce(topic, key=b"collection-a", value=f"m{i}".encode())
    assert producer.flush(30) == 0

    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": topic, "auto.offset.reset": "earliest"}
    )
    consumer.subscribe([topic])
    seen: list[tuple[int, bytes]] = []

    def all_arrived() -> None:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen.append((message.partition(), message.value()))
        assert len(seen) == 10

    try:
        assert_eventually(all_arrived, timeout=60, interval=0)
    finally:
        consumer.close()
    # One key, one partition, issue order.
    assert len({partition for partition, _ in seen}) == 1
    assert [value for _, value in seen] == [f"m{i}".encode() for i in range(10)]


def test_redis_answers_with_aof_when_local(
    redis: redis_lib.Redis, infra_config: InfraConfig
) -> None:
    assert redis.ping()
    if infra_config.redis_url is None:
        assert redis.config_get("appendonly") == {"appendonly": "yes"}


def test_spark_reads_the_topic_with_its_kafka_source(kafka: str, topic: str, spark: Any) -> None:
    producer = Producer({"bootstrap.servers": kafka})
    producer.produce(topic, key=b"k", value=b"through spark")
    assert producer.flush(30) == 0

    rows = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", kafka)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .selectExpr("CAST(key AS STRING) AS key", "value", "offset")
        .collect()
    )
    assert [(row.key, bytes(row.value), row.offset) for row in rows] == [("k", b"through spark", 0)]


@local_processes_only
def test_status_shows_the_services_answering(
    endpoints: devservices.Endpoints, infra_config: InfraConfig
) -> None:
    rows = {row.name: row for row in devservices.status(infra_config)}
    assert rows["kafka"].answers and rows["kafka"].address == endpoints.kafka_bootstrap
    assert rows["redis"].answers and rows["redis"].address == endpoints.redis_url


@local_processes_only
def test_up_again_reuses_the_running_services(
    endpoints: devservices.Endpoints, infra_config: InfraConfig
) -> None:
    again = devservices.up(infra_config)
    assert again.started == ()
    assert (again.kafka_bootstrap, again.redis_url) == (
        endpoints.kafka_bootstrap,
        endpoints.redis_url,
    )
