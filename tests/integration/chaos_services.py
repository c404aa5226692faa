"""The replicated services of a chaos run, and when each is whole again after a fault.

Three KRaft brokers (``kafka_cluster.py``: replication factor 3, ``min.insync.replicas``
2) and a Redis Cluster of three primaries with two replicas each (``redis_cluster.py``),
on loopback, in the run's folder; the request topic with four partitions.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterator
from pathlib import Path

from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.kafka_cluster import LocalKafkaCluster, start_kafka_cluster
from collection_manager.devservices.processes import pid_alive
from collection_manager.devservices.redis_cluster import LocalRedisCluster, start_cluster
from tests.support import assert_eventually

PARTITIONS = 4  # workload.partitions_in_order reads four
PRIMARIES, REPLICAS_PER_PRIMARY = 3, 2
WHOLE_TIMEOUT_S = 180.0


@dataclasses.dataclass
class Services:
    """The brokers, the Redis Cluster and the request topic of one run."""

    brokers: LocalKafkaCluster
    redis: LocalRedisCluster
    topic: str

    @property
    def dead_letter_topic(self) -> str:
        return f"{self.topic}-dead"  # as consumer_env names it

    def redis_whole(self) -> None:
        """Raises AssertionError unless every node runs, three are primaries and each has
        its two replicas linked: a primary may then be lost again."""
        assert all(pid_alive(node.pid) for node in self.redis.nodes), "a Redis node is down"
        try:
            primaries = self.redis.primaries()
            linked = {p.port: len(self.redis.replicas_of(p)) for p in primaries}
        except InfrastructureError as exc:
            raise AssertionError(f"Redis does not answer: {exc}") from exc
        assert len(primaries) == PRIMARIES, f"{len(primaries)} primaries"
        assert all(n == REPLICAS_PER_PRIMARY for n in linked.values()), f"replicas: {linked}"

    def wait_redis_whole(self) -> None:
        assert_eventually(self.redis_whole, WHOLE_TIMEOUT_S, 0.5)

    def wait_kafka_in_sync(self) -> None:
        """Every partition of the request and dead-letter topics on all three brokers."""
        for topic in (self.topic, self.dead_letter_topic):
            if topic == self.topic or self._exists(topic):
                self.brokers.wait_fully_replicated(topic)

    def _exists(self, topic: str) -> bool:
        admin = AdminClient({"bootstrap.servers": self.brokers.bootstrap, "log_level": 0})
        return topic in admin.list_topics(timeout=10).topics

    def stop(self) -> None:
        with contextlib.suppress(Exception):
            self.brokers.stop()
        self.redis.stop()


@contextlib.contextmanager
def replicated_services(folder: Path, topic: str) -> Iterator[Services]:
    """Starts the brokers, the Redis Cluster and the topic; stops them on the way out."""
    brokers = start_kafka_cluster(folder / "kafka")
    try:
        redis = start_cluster(folder / "redis", masters=PRIMARIES, replicas=REPLICAS_PER_PRIMARY)
    except BaseException:
        brokers.stop()
        raise
    services = Services(brokers, redis, topic)
    try:
        admin = AdminClient({"bootstrap.servers": brokers.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS)])[topic].result(30)
        brokers.wait_fully_replicated(topic)
        yield services
    finally:
        services.stop()
