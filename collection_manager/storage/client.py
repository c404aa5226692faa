"""Redis clients for one Redis or a Redis Cluster, told apart by asking the server.

``CM_REDIS_URL`` names a single Redis or any node of a cluster; ``redis_client`` asks that
server (``INFO cluster``) and returns redis-py's cluster client for a cluster node, which
discovers the other nodes and follows MOVED and ASK redirections while slots move. Every
command the product sends keeps to one hash slot (``keys.py``), so both clients serve it
alike; what differs is only what concerns every node: the function library
(``library.py``) and the run ids a consumer checks (``progress.py``).

A cluster's URL may name several nodes, ``redis://host1:port1,host2:port2/0``: a client
starts from the first that answers, so one node down (a primary mid-failover) stops no
client from starting.
"""

from __future__ import annotations

import time
import urllib.parse
from collections.abc import Callable
from typing import Any, TypeVar, cast

import redis
from redis.cluster import ClusterNode
from redis.exceptions import BusyLoadingError, ClusterDownError, RedisClusterException

from collection_manager.config import redact_url
from collection_manager.config.errors import ConfigError
from collection_manager.core.errors import InfrastructureError

# The schemes redis-py takes.
REDIS_SCHEMES = ("redis", "rediss", "unix")


def as_text(value: bytes | str) -> str:
    """A Redis reply as text (the store's client does not decode replies)."""
    return value.decode() if isinstance(value, bytes) else value


class FunctionCluster(redis.RedisCluster):
    """redis-py's cluster client, placing a function call by its keys, as it places EVAL.

    redis-py finds the keys of a command whose keys move (FCALL, FCALL_RO) by asking the
    client's default node (``COMMAND GETKEYS``), twice per call: every store function call
    took three round trips, and the node a client started from answered the look-ups of all
    its calls (bench/buckets.py: 9,600 ``COMMAND GETKEYS`` on one of three primaries for
    4,800 ``FCALL_RO`` of 300 reads of a 16-bucket cut). A function call's keys are the
    ``numkeys`` arguments after its name.
    """

    def determine_slot(self, *args: Any) -> int | None:
        """The slot of a function call's keys; redis-py's answer for anything else."""
        if len(args) >= 3 and str(args[0]).upper() in ("FCALL", "FCALL_RO"):
            slots = {self.keyslot(key) for key in args[3 : 3 + int(args[2])]}
            if len(slots) == 1:
                return slots.pop()
        # No keys (any node), or keys of several slots (redis-py refuses): as redis-py does.
        slot: int | None = super().determine_slot(*args)
        return slot


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
    nodes = node_urls(url)
    if len(nodes) == 1:
        single = _single(url, kwargs)
        if not is_cluster_node(single):
            return single
        single.close()
        # The cluster client offers the same commands for keys of one slot; typed as the
        # single client so that callers need not care which one they hold.
        return cast(redis.Redis, FunctionCluster.from_url(url, **kwargs))
    return _cluster_of_any(url, nodes, kwargs)


def node_urls(url: str) -> list[str]:
    """The URL of each node that ``url`` names (``redis://a:1,b:2/0``: two)."""
    parts = urllib.parse.urlsplit(url)
    user, at, hosts = parts.netloc.rpartition("@")
    return [
        urllib.parse.urlunsplit(parts._replace(netloc=f"{user}{at}{host}"))
        for host in hosts.split(",")
    ]


def _single(url: str, kwargs: dict[str, Any]) -> redis.Redis:
    try:
        return redis.Redis.from_url(url, **kwargs)
    except ValueError as exc:  # a port that is no number, ...
        raise _invalid(url, exc) from None


def _cluster_of_any(url: str, nodes: list[str], kwargs: dict[str, Any]) -> redis.Redis:
    """The cluster client, started from the first of ``nodes`` that answers."""
    failed: Exception | None = None
    for node in nodes:
        single = _single(node, kwargs)
        try:
            cluster = is_cluster_node(single)
        except REDIS_FAULTS as exc:
            failed = exc
            continue
        finally:
            single.close()
        if not cluster:
            raise ConfigError(
                f"{redact_url(url)} names several hosts, which must be nodes of one Redis "
                f"Cluster (CM_REDIS_URL), but {redact_url(node)} is a single Redis"
            )
        others = [_cluster_node(other) for other in nodes if other != node]
        return cast(redis.Redis, FunctionCluster.from_url(node, startup_nodes=others, **kwargs))
    assert failed is not None
    raise failed


def _cluster_node(url: str) -> ClusterNode:
    parts = urllib.parse.urlsplit(url)
    try:
        return ClusterNode(parts.hostname or "localhost", parts.port or 6379)
    except ValueError as exc:
        raise _invalid(url, exc) from None


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
    return [send(list(command)) for send in primaries(client)]


def primaries(client: redis.Redis) -> list[Callable[[list[Any]], Any]]:
    """One callable per primary (the one Redis alone) that sends it a command."""
    if not isinstance(client, redis.RedisCluster):
        return [lambda command: client.execute_command(*command)]
    cluster = cast(redis.RedisCluster, client)
    return [
        lambda command, node=node: cluster.execute_command(*command, target_nodes=node)
        for node in cluster.get_primaries()
    ]


# What a Redis or a Redis Cluster raises when it does not answer or refuses a call:
# redis-py's cluster client raises RedisClusterException (not a RedisError) when it
# reaches no node at all.
REDIS_FAULTS: tuple[type[Exception], ...] = (redis.RedisError, RedisClusterException)


T = TypeVar("T")

# What a restart or a failover looks like from a client while it lasts: the server is
# gone or still loading, or no live node serves a slot yet. A refused password is not one.
PASSING_FAULTS: tuple[type[Exception], ...] = (
    redis.ConnectionError,
    redis.TimeoutError,
    BusyLoadingError,
    ClusterDownError,
    RedisClusterException,
)


# How long a read waits by default while Redis fails over (``collections query --timeout``):
# a replica took over 6.8 to 8.9 s after its primary's SIGKILL here (cluster-node-timeout 5 s;
# tests/integration/test_replicated.py prints it), 28.5 s in the slowest run.
READ_TIMEOUT_S = 30.0


def patiently(
    call: Callable[[], T],
    timeout_s: float,
    first_pause_s: float = 0.1,
    answers: Callable[[], bool] = lambda: True,
) -> T:
    """``call()``, called again through faults that pass (``PASSING_FAULTS``, also as the
    cause of a failed connect) until ``timeout_s`` has passed; then the last fault.

    For reads: one that meets a Redis failover answers once a replica took over. When
    ``answers()`` says no node answers at all (a Redis that is down, a wrong address), the
    fault is raised at once: nothing is failing over, there is nothing to wait for.
    """
    deadline = time.monotonic() + timeout_s
    pause = first_pause_s
    while True:
        try:
            return call()
        except Exception as exc:
            left = deadline - time.monotonic()
            if not _passes(exc) or left <= 0 or not answers():
                raise
        time.sleep(min(pause, left))  # the last try comes at the deadline
        pause = min(pause * 2, 1.0)


def any_node_answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether any node ``url`` names answers at all (``PING``; one still loading answers)."""
    for node in node_urls(url):
        try:
            with redis.Redis.from_url(
                node, socket_connect_timeout=timeout_s, socket_timeout=timeout_s
            ) as client:
                client.ping()
            return True
        except (BusyLoadingError, redis.AuthenticationError, redis.ResponseError):
            return True  # it answered, if only to refuse
        except (redis.RedisError, ValueError, OSError):
            continue
    return False


def _passes(exc: BaseException) -> bool:
    if isinstance(exc, redis.AuthenticationError):
        return False
    if isinstance(exc, PASSING_FAULTS):
        return True
    return (
        isinstance(exc, InfrastructureError)
        and exc.__cause__ is not None
        and _passes(exc.__cause__)
    )
