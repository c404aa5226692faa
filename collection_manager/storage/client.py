"""Redis clients for one Redis or a Redis Cluster, told apart by asking the server.

``CM_REDIS_URL`` names a single Redis or any node of a cluster; ``redis_client`` asks that
server (``INFO cluster``) and returns redis-py's cluster client for a cluster node, which
discovers the other nodes and follows MOVED and ASK redirections while slots move. Every
command the product sends keeps to one hash slot (``keys.py``), so both clients serve it
alike; what differs is only what concerns every node: the function library
(``library.py``) and the run ids a consumer checks (``progress.py``).
"""

from __future__ import annotations

import urllib.parse
from typing import Any, cast

import redis
from redis.exceptions import RedisClusterException

from collection_manager.config import redact_url
from collection_manager.config.errors import ConfigError
from collection_manager.core.errors import InfrastructureError

# The schemes redis-py takes.
REDIS_SCHEMES = ("redis", "rediss", "unix")


def as_text(value: bytes | str) -> str:
    """A Redis reply as text (the store's client does not decode replies)."""
    return value.decode() if isinstance(value, bytes) else value


def redis_client(url: str, **kwargs: Any) -> redis.Redis:
    """A client of the Redis at ``url``: a cluster client when it is a cluster node.

    ``kwargs`` go to every connection (timeouts, ``decode_responses``, a connect hook).

    Raises:
        ConfigError: when ``url`` is no Redis URL (redis-py would raise a ValueError).
        redis.RedisError: when the server does not answer (as the first command would).
    """
    try:
        scheme = urllib.parse.urlsplit(url).scheme
    except ValueError as exc:  # a broken IPv6 address, ...
        raise _invalid(url, exc) from None
    if scheme not in REDIS_SCHEMES:
        raise ConfigError(
            f"{redact_url(url)} is not a Redis URL (CM_REDIS_URL): it must start with "
            f"{', '.join(s + '://' for s in REDIS_SCHEMES)}"
        )
    try:
        single = redis.Redis.from_url(url, **kwargs)
    except ValueError as exc:  # a port that is no number, ...
        raise _invalid(url, exc) from None
    if not is_cluster_node(single):
        return single
    single.close()
    # The cluster client offers the same commands for keys of one slot; typed as the
    # single client so that callers need not care which one they hold.
    return cast(redis.Redis, redis.RedisCluster.from_url(url, **kwargs))


def connected_client(url: str, **kwargs: Any) -> redis.Redis:
    """``redis_client`` that has answered a ``PING``: a wrong address, user or password
    fails here, in the one wording every command uses for it.

    Raises:
        ConfigError: when ``url`` is no Redis URL.
        InfrastructureError: when Redis does not answer or refuses the user and password.
    """
    kwargs.setdefault("socket_connect_timeout", 5)
    try:
        client = redis_client(url, **kwargs)
        client.ping()
    except redis.AuthenticationError as exc:
        raise InfrastructureError(
            f"Redis at {redact_url(url)} refused the user and password in CM_REDIS_URL: {exc}"
        ) from exc
    except REDIS_FAULTS as exc:
        raise InfrastructureError(f"Redis at {redact_url(url)} does not answer: {exc}") from exc
    return client


def _invalid(url: str, exc: ValueError) -> ConfigError:
    return ConfigError(f"{redact_url(url)} is not a valid Redis URL (CM_REDIS_URL): {exc}")


def is_cluster_node(client: redis.Redis) -> bool:
    """Whether ``client`` talks to a node of a Redis Cluster."""
    if isinstance(client, redis.RedisCluster):
        return True
    return bool(client.info("cluster").get("cluster_enabled"))


def on_every_primary(client: redis.Redis, *command: Any) -> list[Any]:
    """``command``'s reply from each primary of a cluster, or from the one Redis."""
    if not isinstance(client, redis.RedisCluster):
        return [client.execute_command(*command)]
    cluster = cast(redis.RedisCluster, client)
    return [
        cluster.execute_command(*command, target_nodes=node) for node in cluster.get_primaries()
    ]


# What a Redis or a Redis Cluster raises when it does not answer or refuses a call:
# redis-py's cluster client raises RedisClusterException (not a RedisError) when it
# reaches no node at all.
REDIS_FAULTS: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)
