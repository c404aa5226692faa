"""Years of replica churn on one deployment: control state stays flat
(docs/concepts/leases-and-retention.md).

Thousands of replicas are added and removed, as autoscaling and rolling deploys do, by a
real controller on the session's Kafka and Redis; what it published goes through the
consumer's own steps (the epoch authority, the store, the sightings). With a retention of
a millisecond, every removed replica is collected at the next lease check: the keys and
bytes of the namespace, and the fences of the collection, stay what they were after the
warm-up. A late request of a collected incarnation is refused, not fused.
"""

from __future__ import annotations

import time

import pytest
import redis as redis_lib
from confluent_kafka import Consumer, TopicPartition

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.core.epochs import check_issued, claimed_replicas
from collection_manager.core.errors import EpochError
from collection_manager.core.requests import Append, Heartbeat, Request
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.epochs import IssuedEpochs
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.replica_keys import ReplicaKeys
from collection_manager.storage.replicas import ReplicaRecord
from collection_manager.storage.store import RedisStore
from schemas.codec import decode_request, encode_request

CYCLES = 2_000
WARM_UP = 200
MEASURE_EVERY = 450


class ConsumerSteps:
    """What the consumer does with the topic's new records, without Spark: refuse what
    the authority refuses, apply the rest, record the sightings."""

    def __init__(self, kafka: str, topic: str, redis: redis_lib.Redis, namespace: str) -> None:
        self.topic, self.store = topic, RedisStore(redis)
        self.authority = IssuedEpochs(redis, namespace)
        self.sightings = ReplicaRecord(redis, namespace)
        self.next = dict.fromkeys(range(4), 0)
        self.kafka = Consumer(
            {"bootstrap.servers": kafka, "group.id": f"{topic}-churn", "fetch.wait.max.ms": 10}
        )
        self.kafka.assign([TopicPartition(topic, partition, 0) for partition in self.next])
        self.refused: list[str] = []

    def catch_up(self) -> None:
        """Reads every partition up to its end now, then applies each in offset order."""
        high = {
            p: self.kafka.get_watermark_offsets(TopicPartition(self.topic, p), 10)[1]
            for p in self.next
        }
        read: dict[int, list[tuple[int, Request]]] = {p: [] for p in self.next}
        while any(self.next[p] < high[p] for p in self.next):
            for message in self.kafka.consume(1000, timeout=0.05):
                assert message.error() is None, message.error()
                request = decode_request(message.value())
                read[message.partition()].append((message.offset(), request))
                self.next[message.partition()] = message.offset() + 1
        for partition, requests in read.items():
            self.apply(partition, requests)

    def apply(self, partition: int, requests: list[tuple[int, Request]]) -> None:
        authority = self.authority.authority(claimed_replicas(r for _, r in requests))
        accepted = []
        for offset, request in requests:
            try:
                check_issued(request, authority)
            except EpochError as exc:
                self.refused.append(str(exc))
            else:
                accepted.append((offset, request))
        self.store.apply_requests(self.topic, partition, accepted)
        issued = {replica: epochs.highest for replica, epochs in authority.issued.items()}
        self.sightings.record(self.topic, partition, accepted, int(time.time() * 1000), issued)

    def close(self) -> None:
        self.kafka.close()


def _footprint(redis: redis_lib.Redis, namespace: str, spec: CollectionSpec) -> tuple[int, int]:
    """The namespace's keys and their bytes, with the collection's fences."""
    keys = {*redis.scan_iter(f"{namespace}:*"), *redis.scan_iter(f"{{{namespace}}}:*")}
    keys.add(CollectionKeys(spec.name).fences.encode())
    sizes = [redis.memory_usage(key) or 0 for key in keys]
    return sum(1 for size in sizes if size), sum(sizes)


# Slow: thousands of adds and removals, about 55 s (make test-slow, which CI runs after
# make test).
@pytest.mark.slow
def test_thousands_of_added_and_removed_replicas_leave_flat_control_state(
    kafka: str, redis: redis_lib.Redis, topic: str, frontiers_spec: CollectionSpec, unique: str
) -> None:
    spec = frontiers_spec
    namespace = f"cm:replicas:{unique}"
    config = ReplicaConfig(replica_namespace=namespace, replica_retention_ms=1)
    controller = Controller(KafkaProducer(ProducerConfig(kafka)), redis, topic, config, [spec.name])
    agents = KafkaProducer(ProducerConfig(kafka))
    steps = ConsumerSteps(kafka, topic, redis, namespace)
    footprints: dict[int, tuple[int, int]] = {}
    try:
        for cycle in range(1, CYCLES + 1):
            replica = f"pod-{cycle}"
            epoch = controller.add_replica(replica)
            row = Append(spec.name, replica, epoch, (((replica, "a", 0, None), 1),), 0)
            agents.produce(topic, spec.name.encode(), encode_request(row))
            controller.remove_replica(replica, "scaled in")
            if cycle % 50 == 0:
                # The consumer applies the removals, then (long after, in a real
                # deployment: the retention is days) the controller collects them.
                assert agents.flush(30) == 0
                steps.catch_up()
                time.sleep(0.002)  # past the retention of every removal so far
                controller.check_leases()
            if cycle >= WARM_UP and (cycle - WARM_UP) % MEASURE_EVERY == 0:
                footprints[cycle] = _footprint(redis, namespace, spec)
        warm = footprints[WARM_UP]
        for cycle, (keys, size) in footprints.items():
            assert keys == warm[0], (cycle, footprints)
            assert size <= warm[1] * 1.1 + 256, (cycle, footprints)
        assert redis.hlen(ReplicaKeys(namespace).members) == 0
        assert redis.hlen(CollectionKeys(spec.name).fences) == 0
        assert RedisStore(redis).snapshot(spec.name).rows == {}

        # Late requests of pod-1's collected incarnation: refused, with why.
        late: list[tuple[int, Request]] = [
            (-2, Append(spec.name, "pod-1", 1, ((("pod-1", "late", 0, None), 1),), 0)),
            (-1, Heartbeat("pod-1", 1)),
        ]
        steps.refused.clear()
        steps.apply(0, late)
        collected = (
            "epoch 1 of replica pod-1 belongs to an incarnation that was removed and "
            "collected after the retention (CM_REPLICA_RETENTION_MS), or was never issued"
        )
        assert steps.refused == [collected, collected]
        # Added again, it starts above every collected epoch.
        assert controller.add_replica("pod-1") > 1
    finally:
        steps.close()
        agents.close()
        controller.close()
