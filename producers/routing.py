"""Routing for producers of raw requests: one import to send requests a bucketed
collection accepts, where the agents send theirs (docs/howto/buckets.md;
docs/concepts/buckets.md).

A collection of ``N > 1`` buckets takes each request for one bucket, keyed
``<collection>#<bucket>``, and, when its buckets were assigned partitions at its creation
(``core/partitions.py``), produced to that bucket's partition: so a bucket's requests, from
every writer, share a partition and keep their order. Build the request as for an
unbucketed collection, then :func:`produce` it::

    from confluent_kafka import Producer
    from producers.routing import PRODUCER_SETTINGS, collection_spec, produce

    producer = Producer({"bootstrap.servers": bootstrap, **PRODUCER_SETTINGS})
    spec = collection_spec("arrangement_sizes")   # read once: it never changes while it lives
    produce(producer, topic, append, spec)

or send each of :func:`messages_for` (key, value and partition) yourself, passing the
partition when it is not None. An append whose rows lie in several buckets becomes one
request per bucket, the *parts* of one group, which readers see whole or not at all; a
delete goes to the buckets its filter pins (``replica_id = r`` pins one), else to all of
them. For a collection of one bucket the request is sent as it is, keyed by the
collection, its partition picked by the key: today's layout.

Where the key picks the partition (an unbucketed collection, one created before
assignments, control requests), it picks the agents' partition only with the agents'
partitioner: ``PRODUCER_SETTINGS`` holds it (``murmur2_random``, Java's; librdkafka's own
default, ``consistent_random``, hashes keys elsewhere), with idempotence and
``acks=all``, on which the order of a partition's requests rests.

Thin wrappers of ``collection_manager.core.routing`` and ``request_key``, which the
agents, the embedded API and the controller use too.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from collection_manager.config import InfraConfig, from_env
from collection_manager.config.services import running
from collection_manager.core.requests import Append, Delete, Request, request_key
from collection_manager.core.routing import partition_of, route_append, route_delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.producer import ENFORCED
from collection_manager.storage.catalog import Catalog
from collection_manager.storage.client import connected_client
from schemas.codec import encode_request

__all__ = [
    "PRODUCER_SETTINGS",
    "Message",
    "collection_spec",
    "key_for",
    "messages_for",
    "partition_for",
    "produce",
    "requests_for",
]

PRODUCER_SETTINGS: dict[str, str] = dict(ENFORCED)
"""librdkafka settings of a raw producer, as the agents' producers have them: idempotent,
``acks=all``, and Java's key partitioner, so a key picks the agents' partition."""


class Message(NamedTuple):
    """One Kafka message of a routed request.

    Attributes:
        key: its key (:func:`key_for`).
        value: the request, Avro single-object encoded as the consumer reads it.
        partition: the partition to produce it to; None: let its key pick one (the
            producer's default partitioner, as for control requests and collections
            created before partition assignments).
    """

    key: bytes
    value: bytes
    partition: int | None


def collection_spec(name: str, redis_url: str | None = None) -> CollectionSpec:
    """The definition of collection ``name`` as the catalog holds it, with its buckets:
    what :func:`requests_for` routes by. Read it once: a live collection's buckets never
    change (a collection dropped and created again with others needs a new read).

    Args:
        name: the collection.
        redis_url: its Redis; default ``CM_REDIS_URL``, else the one ``infra up`` started,
            as the commands find it.

    Raises:
        UnknownCollectionError: when no such collection was created.
        InfrastructureError: when no Redis is given, configured or running.
    """
    url = redis_url or running(from_env(InfraConfig), needs=("redis",)).redis_url
    client = connected_client(url)
    try:
        return Catalog(client).spec(name)
    finally:
        client.close()


def requests_for(request: Request, spec: CollectionSpec | None = None) -> list[Request]:
    """The requests to send for ``request``: one per bucket it touches (an ``Append`` or a
    ``Delete`` of a bucketed collection), else ``[request]``.

    Args:
        request: any request; appends and deletes are routed by ``spec``.
        spec: the collection's definition as the catalog holds it
            (:func:`collection_spec`); needed for appends and deletes, not for the
            control requests (``Heartbeat``, ``ReplicaAdded``, ``ReplicaRemoved``).

    Raises:
        ValueError: when an append or delete comes without its collection's spec, or with
            the spec of another collection.
        SchemaError: when a row's bucket column holds no string or long.
    """
    if not isinstance(request, Append | Delete):
        return [request]
    if spec is None or spec.collection != request.collection:
        named = "no spec" if spec is None else f"the spec of {spec.collection!r}"
        raise ValueError(
            f"a request for collection {request.collection!r} is routed by that collection's "
            f"spec (collection_spec), not by {named}"
        )
    if isinstance(request, Append):
        return list(route_append(request, spec))
    return list(route_delete(request, spec))


def key_for(request: Request) -> bytes:
    """The Kafka key of a request as :func:`requests_for` returns it: ``<collection>#<bucket>``
    for a bucket's, the collection for an unbucketed collection's, the replica id for a
    control request."""
    return request_key(request).encode()


def partition_for(request: Request, spec: CollectionSpec | None = None) -> int | None:
    """The partition of a request as :func:`requests_for` returns it: its bucket's, when
    its collection's buckets were assigned partitions; else None, and its key picks one."""
    return partition_of(request, spec)


def messages_for(request: Request, spec: CollectionSpec | None = None) -> list[Message]:
    """Each Kafka message to produce for ``request``, in order: the routed requests
    (:func:`requests_for`), each keyed (:func:`key_for`), encoded as the consumer reads them
    (Avro single-object encoding), with its partition (:func:`partition_for`).

    Raises:
        ValueError, SchemaError: as :func:`requests_for`.
    """
    return [
        Message(key_for(part), encode_request(part), partition_of(part, spec))
        for part in requests_for(request, spec)
    ]


def produce(
    producer: Any, topic: str, request: Request, spec: CollectionSpec | None = None, **options: Any
) -> int:
    """Produces each message of ``request`` (:func:`messages_for`) to ``topic``, to its
    partition where it has one; returns how many.

    Args:
        producer: a ``confluent_kafka.Producer`` (anything with its ``produce``).
        topic: the request topic (``CM_TOPIC``).
        request: as :func:`requests_for`.
        spec: as :func:`requests_for`.
        options: passed to every ``produce`` call (``on_delivery``, ``headers``, ...).

    Raises:
        ValueError, SchemaError: as :func:`requests_for`, before anything is produced.
    """
    messages = messages_for(request, spec)
    for message in messages:
        placed = {} if message.partition is None else {"partition": message.partition}
        producer.produce(topic, key=message.key, value=message.value, **placed, **options)
    return len(messages)
