"""Commands on the keys of many slots, sent as one pipeline per Redis node.

A read of a bucketed collection's cut asks every bucket (up to ``MAX_BUCKETS``), each on
its own hash slot. One call per bucket, one after the other, took a round trip each; here
they go as one pipeline to the one Redis, or, on a Redis Cluster, one pipeline to each
primary, the commands grouped by the node the cluster client's slot table says serves each
key. Each group is a plain pipeline to its node: redis-py's own cluster pipeline asks a node
for the keys of every ``FCALL`` (``COMMAND GETKEYS``), a round trip per command again
(``client.FunctionCluster`` says why).

A command that fails in its pipeline (a slot that moved or migrates: ``MOVED``, ``ASK``,
``TRYAGAIN``; a node failing over) comes back as its exception, for the caller to send
again on its own through the client, which follows redirections and waits for migrations.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, cast

import redis

from collection_manager.storage.client import REDIS_FAULTS


@dataclasses.dataclass(frozen=True)
class Keyed:
    """One command, and a key of it that places it on a node (all its keys share a slot)."""

    key: str
    args: tuple[Any, ...]


def pipelined(client: redis.Redis, commands: Sequence[Keyed]) -> list[Any]:
    """Each command's reply, or the exception it failed with, in the order given.

    The nodes are sent their pipelines one after the other, the last command's node last,
    and that command ends its pipeline: it runs after every other command has (a reader
    checks there that nothing moved on while it read).
    """
    replies: list[Any] = [None] * len(commands)
    if not commands:
        return replies
    for node, indexes in _by_node(client, commands):
        try:
            with node.pipeline(transaction=False) as pipe:
                for index in indexes:
                    pipe.execute_command(*commands[index].args)
                answered = pipe.execute(raise_on_error=False)
        except REDIS_FAULTS as exc:  # the node did not answer: each command is sent again
            answered = [exc] * len(indexes)
        for index, reply in zip(indexes, answered, strict=True):
            replies[index] = reply
    return replies


def _by_node(client: redis.Redis, commands: Sequence[Keyed]) -> list[tuple[redis.Redis, list[int]]]:
    """The commands' indexes per node that serves their keys, in order, the node of the
    last command last."""
    if not isinstance(client, redis.RedisCluster):
        return [(client, list(range(len(commands))))]
    cluster = cast(redis.RedisCluster, client)
    groups: dict[str, tuple[redis.Redis, list[int]]] = {}
    for index, command in enumerate(commands):
        node = cluster.get_node_from_key(command.key)
        if node.name not in groups:
            groups[node.name] = (cluster.get_redis_connection(node), [])
        groups[node.name][1].append(index)
    ordered = list(groups.values())
    last = next(group for group in ordered if len(commands) - 1 in group[1])
    return [group for group in ordered if group is not last] + [last]
