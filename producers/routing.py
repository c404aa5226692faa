"""Routing for producers of raw requests: one import to send requests a bucketed
collection accepts (docs/howto/buckets.md; docs/concepts/buckets.md).

A collection of ``N > 1`` buckets takes each request for one bucket, keyed
``<collection>#<bucket>`` (so a bucket's requests share a partition and keep their
order). Build the request as for an unbucketed collection, then send what
:func:`messages_for` returns, or each of :func:`requests_for` keyed by :func:`key_for`::

    from producers.routing import collection_spec, messages_for

    spec = collection_spec("arrangement_sizes")   # read once: N never changes while it lives
    for key, value in messages_for(append, spec):
        producer.produce(topic, key=key, value=value)

An append whose rows lie in several buckets becomes one request per bucket, the *parts*
of one group, which readers see whole or not at all; a delete goes to the buckets its
filter pins (``replica_id = r`` pins one), else to all of them. For a collection of one
bucket the request is sent as it is, keyed by the collection: today's layout.

Thin wrappers of ``collection_manager.core.routing`` and ``request_key``, which the
agents, the embedded API and the controller use too.
"""

from __future__ import annotations

from collection_manager.config import InfraConfig, from_env
from collection_manager.config.services import running
from collection_manager.core.requests import Append, Delete, Request, request_key
from collection_manager.core.routing import route_append, route_delete
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import connected_client
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request

__all__ = ["collection_spec", "key_for", "messages_for", "requests_for"]


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
        return RedisStore(client).spec(name)
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


def messages_for(request: Request, spec: CollectionSpec | None = None) -> list[tuple[bytes, bytes]]:
    """``(key, value)`` of each Kafka message to produce for ``request``, in order: the
    routed requests (:func:`requests_for`) keyed (:func:`key_for`) and encoded as the
    consumer reads them (Avro single-object encoding).

    Raises:
        ValueError, SchemaError: as :func:`requests_for`.
    """
    return [(key_for(part), encode_request(part)) for part in requests_for(request, spec)]
