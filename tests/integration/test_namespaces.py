"""Two deployments on one Redis, each with its namespace, topic and collections, using the
same replica ids and restarting them: neither fuses, fences nor retracts the other's rows
(docs/concepts/leases-and-retention.md, "Namespaces").

The requests each deployment's controller published go through the store as the consumer
applies them (topic by topic, partition by partition in offset order), so a removal in one
deployment is applied before the other's later appends of its own ``r1``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
import redis as redis_lib
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request
from tests.integration.workload import partitions_in_order
from tests.unit.strategies import FRONTIERS


@dataclasses.dataclass
class Deployment:
    """One deployment: a controller of its namespace, its topic and its collection."""

    controller: Controller
    spec: CollectionSpec
    producer: KafkaProducer  # partitions by key as the agents and the controller do

    def add(self, replica_id: str) -> int:
        """A new incarnation (the previous one, if any, removed first)."""
        return self.controller.add_replica(replica_id)

    def append(self, replica_id: str, epoch: int, export_id: str) -> None:
        """What that replica's agent would publish: one row, keyed by the collection."""
        row = ((replica_id, export_id, epoch, None), 1)
        request = Append(self.spec.name, replica_id, epoch, (row,), produced_at=0)
        key = self.spec.name.encode()
        self.producer.produce(self.controller.topic, key, encode_request(request))
        assert self.producer.flush(30) == 0

    def apply(self, store: RedisStore, kafka: str) -> None:
        """Everything published so far, applied as the deployment's consumer would."""
        for partition, requests in partitions_in_order(kafka, self.controller.topic).items():
            store.apply_requests(self.controller.topic, partition, requests)

    def rows(self, store: RedisStore) -> set[tuple[object, ...]]:
        snapshot = store.snapshot(self.spec.name).rows
        assert set(snapshot.values()) <= {1}, snapshot
        return set(snapshot)


@pytest.fixture
def deployments(
    endpoints: devservices.Endpoints, redis: redis_lib.Redis, unique: str
) -> Iterator[list[Deployment]]:
    kafka = endpoints.kafka_bootstrap
    store, admin = RedisStore(redis), AdminClient({"bootstrap.servers": kafka})
    made: list[Deployment] = []
    try:
        for name in ("a", "b"):
            topic = f"t-{unique}-{name}"
            admin.create_topics([NewTopic(topic, num_partitions=4)])[topic].result(30)
            spec = dataclasses.replace(FRONTIERS, name=f"frontiers-{name}-{unique}")
            store.create_collection(spec)
            config = ReplicaConfig(replica_namespace=f"cm:replicas:{name}-{unique}")
            producer = KafkaProducer(ProducerConfig(kafka))
            controller = Controller(producer, redis, topic, config, [spec.name])
            made.append(Deployment(controller, spec, KafkaProducer(ProducerConfig(kafka))))
        yield made
    finally:
        for deployment in made:
            deployment.controller.close()
            deployment.producer.close()
            store.drop_collection(deployment.spec.name)
            topic = deployment.controller.topic
            admin.delete_topics([topic])[topic].result(30)


def test_a_restart_in_one_namespace_never_fuses_the_same_replica_id_in_another(
    kafka: str, redis: redis_lib.Redis, deployments: list[Deployment]
) -> None:
    store, (a, b) = RedisStore(redis), deployments
    assert (a.add("r1"), b.add("r1")) == (1, 1)
    a.append("r1", 1, "before")
    b.append("r1", 1, "before")

    # a restarts its r1: epoch 1 is fenced in a's collection, and late data of it is fused.
    assert a.add("r1") == 2
    a.append("r1", 2, "after")
    a.append("r1", 1, "late")
    b.append("r1", 1, "after")  # b's r1 is still at epoch 1: nothing of a's applies to it
    for deployment in (a, b):
        deployment.apply(store, kafka)
    assert a.rows(store) == {("r1", "after", 2, None)}
    assert b.rows(store) == {("r1", "before", 1, None), ("r1", "after", 1, None)}

    # Now b restarts its r1 twice, past a's epoch: a's current incarnation is untouched.
    assert (b.add("r1"), b.add("r1")) == (2, 3)
    b.append("r1", 3, "again")
    a.append("r1", 2, "more")
    for deployment in (b, a):
        deployment.apply(store, kafka)
    assert a.rows(store) == {("r1", "after", 2, None), ("r1", "more", 2, None)}
    assert b.rows(store) == {("r1", "again", 3, None)}
    assert redis.hgetall(CollectionKeys(a.spec.name).fences) == {b"r1": b"1"}
    assert redis.hgetall(CollectionKeys(b.spec.name).fences) == {b"r1": b"2"}
