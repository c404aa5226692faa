"""The command line's side of partition assignments (``core/partitions.py``): the request
topic's partitions, read from Kafka when a bucketed collection is created, and how a
collection's partitions read in tables.

Only a new bucketed collection asks Kafka: one that exists keeps what it has, an
assignment or none (created before assignments, its keys' hashes place its buckets), so
that redefining it never moves a bucket to another partition; an unbucketed one needs none.
"""

from __future__ import annotations

import dataclasses

from collection_manager.core.errors import InfrastructureError
from collection_manager.core.partitions import Partitioning, assign
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.topics import partitions_or_create

KEY_HASH = "by its keys' hash (created before buckets were assigned partitions)"


class RequestTopic:
    """The request topic new bucketed collections are assigned the partitions of, asked of
    Kafka once, on first need. A missing topic is created with as many partitions as the
    collection has buckets, and at least ``create_partitions`` (``CM_TOPIC_PARTITIONS``).

    Args:
        bootstrap: Kafka's bootstrap servers; empty when none is configured or running.
        topic: the request topic (``CM_TOPIC``).
        create_partitions: the fewest partitions of a topic this creates.
    """

    def __init__(self, bootstrap: str, topic: str, create_partitions: int) -> None:
        self.bootstrap = bootstrap
        self.topic = topic
        self._create_partitions = create_partitions
        self._count: int | None = None
        self.created = False

    def partitions(self, buckets: int) -> int:
        """How many partitions the topic has (creating it when missing).

        Raises:
            InfrastructureError: when there is no Kafka to ask.
            TopicConfigError: when Kafka does not answer or refuses to create the topic.
        """
        if self._count is None:
            if not self.bootstrap:
                raise InfrastructureError(
                    f"a bucketed collection's buckets are each given a partition of {self.topic} "
                    "(CM_TOPIC), and no Kafka was found to read them from: set "
                    "CM_KAFKA_BOOTSTRAP, or start one with `collection-manager infra up`"
                )
            wanted = max(buckets, self._create_partitions)
            self._count, self.created = partitions_or_create(self.bootstrap, self.topic, wanted)
        return self._count


def placed(
    spec: CollectionSpec, existing: CollectionSpec | None, topic: RequestTopic | None
) -> CollectionSpec:
    """``spec`` with the partitions it is created with: an existing collection's own (or
    none), a new bucketed one's assigned over ``topic``'s partitions, else none.

    Raises:
        InfrastructureError, TopicConfigError: as :meth:`RequestTopic.partitions`, for a new
            bucketed collection.
    """
    if existing is not None:
        return _with(spec, existing.partitioning)
    if spec.buckets == 1 or topic is None:
        return _with(spec, None)
    count = topic.partitions(spec.buckets)
    return _with(spec, assign(spec.collection, spec.buckets, count, topic.topic))


def _with(spec: CollectionSpec, partitioning: Partitioning | None) -> CollectionSpec:
    return dataclasses.replace(spec, partitioning=partitioning)


def placement(spec: CollectionSpec) -> str:
    """Where a bucketed collection's requests go, in words (empty when unbucketed):
    ``on 16 partitions of cm.requests, each bucket its own``."""
    if spec.buckets == 1:
        return ""
    if spec.partitioning is None:
        return f"placed {KEY_HASH}"
    return f"on {spec.partitioning.text()}"


def bucket_partition(spec: CollectionSpec, bucket: int) -> int | str:
    """A bucket's partition as tables show it (``hash``: its key's hash places it)."""
    partition = spec.partition_of(bucket)
    return "hash" if partition is None else partition
