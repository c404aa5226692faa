"""No epoch is handed out twice across a Redis failover that loses the primary's last writes.

On a Redis Cluster with a replica per primary: replica r1 is added (epoch 1); the replica of the
primary holding the controller's issued epochs is cut off (SIGSTOP) and the primary's replication
buffers filled, so that what it takes next stays its own; r1 is removed and added again; the primary
is SIGKILLed and its replica, without those writes, promoted; r1 is added once more. Every
``ReplicaAdded`` the topic carries for r1 must have an epoch of its own
(docs/concepts/epochs-and-fences.md: a re-added replica always gets a higher epoch).

With the barrier (``CM_REDIS_REPLICA_ACKS=1``, ``Durability``) the removal made while the
replica is cut off is refused before anything is published, so the lost writes were never
acted on. Without it, the same run publishes epoch 2 twice: the variant that shows the test
sees the fault (``make test-slow``).
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest
import redis
from confluent_kafka import Consumer, TopicPartition
from redis.crc import key_slot

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.core.requests import ReplicaAdded
from collection_manager.devservices.redis_cluster import LocalRedisCluster, start_cluster
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.client import REDIS_FAULTS, redis_client
from collection_manager.storage.replica_keys import ReplicaKeys
from collection_manager.storage.replication import Durability
from schemas.codec import decode_request
from tests.integration.test_replicated import _key_on, _replicas
from tests.support import assert_eventually

PROTECTED = Durability(replicas=1, timeout_ms=2000)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    found = start_cluster(tmp_path_factory.mktemp("redis-epochs"), masters=3, replicas=1)
    yield found
    found.stop()


def _controller(
    kafka: str, cluster: LocalRedisCluster, topic: str, unique: str, durability: Durability
) -> Controller:
    producer = KafkaProducer(ProducerConfig(kafka, client_id=f"ctl-{unique}"))
    client = redis_client(cluster.every_node_url, socket_connect_timeout=2, socket_timeout=5)
    config = ReplicaConfig(replica_namespace=f"cm:replicas:{unique}")
    return Controller(producer, client, topic, config, durability=durability)


def _added_epochs(kafka: str, topic: str, replica_id: str) -> list[int]:
    """The epochs of every ``ReplicaAdded`` of ``replica_id`` on ``topic``, in order."""
    consumer = Consumer(
        {"bootstrap.servers": kafka, "group.id": "epochs", "enable.auto.commit": False}
    )
    try:
        partitions = consumer.list_topics(topic, timeout=10).topics[topic].partitions
        epochs = []
        for partition in partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
            consumer.assign([TopicPartition(topic, partition, low)])
            while high > low and (message := consumer.poll(10)) is not None:
                request = decode_request(message.value())
                if isinstance(request, ReplicaAdded) and request.replica_id == replica_id:
                    epochs.append(request.epoch)
                if message.offset() >= high - 1:
                    break
        return epochs
    finally:
        consumer.close()


def _lose_the_tail(
    cluster: LocalRedisCluster, kafka: str, topic: str, unique: str, durability: Durability
) -> None:
    """Add, remove and re-add r1 around a failover that loses the primary's last writes."""
    controller = _controller(kafka, cluster, topic, unique, durability)
    assert controller.add_replica("r1") == 1
    slot = key_slot(ReplicaKeys(f"cm:replicas:{unique}").issued.encode())
    primary = cluster.slot_owner(slot)
    replicas = assert_eventually(_replicas(cluster, primary, 1), timeout=60)
    for replica in replicas:
        os.kill(replica.pid, signal.SIGSTOP)
    try:
        with redis.Redis(port=primary.port) as direct:
            # More than the sockets between them hold: what follows stays in the primary.
            direct.set(_key_on(cluster, primary), b"x" * (96 << 20))
        try:
            controller.remove_replica("r1", "test")
            controller.add_replica("r1")
        except REDIS_FAULTS:  # the barrier: no replica confirms, nothing is published
            assert durability.replicas > 0
        cluster.kill(primary)
    finally:
        for replica in replicas:
            os.kill(replica.pid, signal.SIGCONT)
    controller.close()
    promoted = cluster.wait_promoted(primary, slot)
    cluster.restart(primary)  # back as a replica of the promoted one
    # Until it synced, the barrier refuses the next add (an agent would retry).
    assert_eventually(_replicas(cluster, promoted, 1), timeout=60)
    again = _controller(kafka, cluster, topic, unique, durability)
    try:
        again.add_replica("r1")
    finally:
        again.close()


def test_a_failover_that_loses_the_tail_hands_out_no_epoch_twice(
    cluster: LocalRedisCluster, kafka: str, topic: str, unique: str
) -> None:
    _lose_the_tail(cluster, kafka, topic, unique, PROTECTED)
    epochs = _added_epochs(kafka, topic, "r1")
    assert epochs == sorted(set(epochs)) and len(epochs) >= 2, epochs


@pytest.mark.slow
def test_without_the_barrier_the_same_failover_hands_out_an_epoch_twice(
    cluster: LocalRedisCluster, kafka: str, topic: str, unique: str
) -> None:
    _lose_the_tail(cluster, kafka, topic, unique, Durability())
    epochs = _added_epochs(kafka, topic, "r1")
    assert len(epochs) > len(set(epochs)), epochs  # e.g. [1, 2, 2]: the fault this guards
