"""What Redis's replicas hold: a barrier before the consumer records a batch as done, and
before the controller acts on an epoch, a member record or a lease it wrote.

Redis replicates asynchronously. A replica promoted after its primary died may lack the primary's
last writes. On one Redis that loses the progress record with the data (it lives beside them) and
the replay restores both. On a Redis Cluster the progress record may live on another shard that kept
it, and then nothing would replay what the failed shard lost. So, before the driver records a
batch's progress, ``replicated`` asks every primary to confirm that its replicas hold everything
written so far (``WAIT``). A promoted replica then lacks at most writes whose progress was never
recorded, which the next start replays (docs/concepts/requests-and-ordering.md). The controller's
writes get the same barrier (``Durability``): an epoch handed out, or a removal published, must not
be rolled back by a failover, or the next add would hand the same epoch to a second incarnation
(docs/concepts/epochs-and-fences.md).

``WAIT`` counts from the last write *of its own connection*, so each primary gets a tiny
write (a counter in one of its own slots) and the ``WAIT`` on one connection, after the
batch's every write: a primary's replication stream is in order, so a replica that holds
the counter's new value holds the batch.
"""

from __future__ import annotations

import dataclasses
from typing import cast

import redis
from redis.crc import key_slot

from collection_manager.config import ConsumerConfig
from collection_manager.storage.errors import StorageError

MARKER = "cm:replicated"


class ReplicasBehindError(StorageError, redis.RedisError):
    """Fewer replicas than required confirmed a primary's writes in time. A ``RedisError``:
    the consumer waits it out, and records no progress meanwhile."""


BATCH_WAITS = "the batch's progress is recorded once they do"


@dataclasses.dataclass(frozen=True)
class Durability:
    """How many replicas of every primary must hold a write before anything acts on it.

    Attributes:
        replicas: ``CM_REDIS_REPLICA_ACKS`` (0: no barrier, a Redis without replicas).
        timeout_ms: ``CM_REDIS_REPLICA_ACK_TIMEOUT_MS``.
    """

    replicas: int = 0
    timeout_ms: int = 10_000

    @classmethod
    def of(cls, config: ConsumerConfig) -> Durability:
        """The settings' barrier, the one the consumer keeps too."""
        return cls(config.redis_replica_acks, config.redis_replica_ack_timeout_ms)

    def confirm(self, client: redis.Redis, waiting: str) -> None:
        """``replicated`` with these settings; ``waiting`` says what waits for them."""
        replicated(client, self.replicas, self.timeout_ms, waiting)


def replicated(
    client: redis.Redis, replicas: int, timeout_ms: int, waiting: str = BATCH_WAITS
) -> None:
    """Returns once ``replicas`` replicas of every primary hold its writes so far.

    Does nothing when ``replicas`` is 0 (a Redis without replicas).

    Raises:
        ReplicasBehindError: a primary's replicas did not confirm within ``timeout_ms``;
            its message ends with ``waiting``.
    """
    if replicas <= 0:
        return
    for node, marker in _primaries(client):
        wait_ms = _within_socket_timeout(node, timeout_ms)
        pipe = node.pipeline(transaction=False)  # one connection: WAIT follows its INCR
        pipe.incr(marker)
        pipe.execute_command("WAIT", replicas, wait_ms)
        try:
            _, confirmed = pipe.execute()
        except (redis.ConnectionError, redis.ResponseError):
            # A primary gone or a slot moved: the cluster client learns the new layout
            # for the next try (it never saw these calls fail itself).
            if isinstance(client, redis.RedisCluster):
                client.nodes_manager.initialize()
            raise
        if int(confirmed) < replicas:
            raise ReplicasBehindError(
                f"only {confirmed} of the {replicas} replicas required (CM_REDIS_REPLICA_ACKS) "
                f"confirmed the writes of the Redis primary at {_address(node)} within "
                f"{wait_ms} ms (CM_REDIS_REPLICA_ACK_TIMEOUT_MS); {waiting}"
            )


def _within_socket_timeout(node: redis.Redis, timeout_ms: int) -> int:
    """``timeout_ms``, shortened to end before the connection's socket timeout: a WAIT that
    outlasts it ends as the client's ``TimeoutError``, not as the refusal that says why
    (the controller's client waits 10 s for a reply, as long as the default WAIT)."""
    socket_timeout = node.connection_pool.connection_kwargs.get("socket_timeout")
    if not socket_timeout:
        return timeout_ms
    return max(1, min(timeout_ms, int(socket_timeout * 1000 * 0.8)))


def _address(node: redis.Redis) -> str:
    kwargs = node.connection_pool.connection_kwargs
    return str(kwargs.get("path") or f"{kwargs.get('host')}:{kwargs.get('port')}")


def _primaries(client: redis.Redis) -> list[tuple[redis.Redis, str]]:
    """Each primary's own client, with a marker key in one of that primary's slots."""
    if not isinstance(client, redis.RedisCluster):
        return [(client, MARKER)]
    cluster = cast(redis.RedisCluster, client)
    markers = _markers(cluster)
    return [
        (cluster.get_redis_connection(node), markers[node.name])
        for node in cluster.get_primaries()
        if node.name in markers  # a primary that serves no slot holds no writes
    ]


def _markers(cluster: redis.RedisCluster) -> dict[str, str]:
    """A marker key per primary, in one of its slots: about as many tries as primaries."""
    slots = cluster.nodes_manager.slots_cache
    owners = {nodes[0].name for nodes in slots.values() if nodes}
    markers: dict[str, str] = {}
    for attempt in range(1 << 20):  # every slot is some tag's well before this
        if len(markers) == len(owners):
            break
        key = f"{MARKER}:{{{attempt}}}"
        serving = slots.get(key_slot(key.encode()))
        if serving:
            markers.setdefault(serving[0].name, key)
    return markers
