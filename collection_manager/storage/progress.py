"""The consumer's own record of its progress, kept in Redis beside the data it describes.

Per request topic one hash ``cm:progress:<topic>`` holds, per partition, the highest offset
whose every record was handled (applied, dead-lettered, or a control request recorded),
and the Kafka cluster id and topic id it was written for. Redis is the source of truth:
when Redis loses its tail (AOF ``everysec``, a restored snapshot) it loses this record with
it, and the consumer reads again from what Redis still holds
(docs/concepts/requests-and-ordering.md).

``guarded_client`` makes a Redis client that refuses to talk to another Redis *process*
than the one it was made for: a restarted Redis may have lost writes, and a writer that
silently reconnected to it would apply newer offsets above a lost gap.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Any

import redis

from collection_manager.storage.client import on_every_primary, redis_client
from collection_manager.storage.dead_letters import DONE
from collection_manager.storage.errors import StorageError
from collection_manager.storage.keys import CATALOG, CollectionKeys, catalog_units

_CLUSTER = "cluster_id"
_TOPIC_ID = "topic_id"


def progress_key(topic: str) -> str:
    """The hash of the consumer's progress and binding for ``topic``."""
    return f"cm:progress:{topic}"


@dataclasses.dataclass(frozen=True)
class Binding:
    """Which Kafka cluster and which incarnation of a topic the progress was written for."""

    cluster_id: str
    topic_id: str


@dataclasses.dataclass(frozen=True)
class Progress:
    """What Redis holds of the consumer's progress on one topic."""

    offsets: dict[int, int]  # partition -> highest handled offset
    binding: Binding | None


@dataclasses.dataclass(frozen=True)
class Forgotten:
    """What ``forget_topic`` cleared: the count of watermark fields and of collections."""

    watermarks: int
    collections: int


def run_id(client: redis.Redis) -> str:
    """The run id of the Redis process ``client`` talks to (new at every Redis start).

    Of a cluster: the run ids of its primaries, sorted and joined by commas.
    """
    return ",".join(
        sorted(str(info["run_id"]) for info in on_every_primary(client, "INFO", "server"))
    )


class RedisRestartedError(StorageError, redis.RedisError):
    """The Redis process is not the one the consumer planned its start with.

    A ``RedisError`` (the consumer waits it out and starts again) but not a
    ``ConnectionError``, which redis-py would retry on a new connection for seconds.
    """


def guarded_client(url: str, expected_run_id: str, **kwargs: Any) -> redis.Redis:
    """A client whose every (re)connection checks that Redis is still process ``run_id``.

    On a cluster every node connected to must be one of the primaries the run id lists:
    a restarted node, a replica promoted by a failover or a node added since may lack
    writes the consumer made (or never had them), so the consumer starts again.
    """
    expected = expected_run_id.split(",")

    def connect(connection: Any) -> None:
        connection.on_connect()
        connection.send_command("INFO", "server")
        info = connection.read_response()
        text = info.decode() if isinstance(info, bytes) else str(info)
        found = next(
            (line.split(":", 1)[1].strip() for line in text.splitlines() if "run_id:" in line),
            "",
        )
        if found not in expected:
            raise RedisRestartedError(
                f"Redis restarted (run id {expected_run_id} is now {found}): it may have lost "
                "its latest writes; the consumer starts again from what Redis holds"
            )

    return redis_client(url, redis_connect_func=connect, **kwargs)


class ProgressRecord:
    """The progress hash of one topic."""

    def __init__(self, client: redis.Redis, topic: str) -> None:
        self._client = client
        self.topic = topic
        self.key = progress_key(topic)

    def read(self) -> Progress:
        """The recorded progress and binding (empty when nothing was recorded)."""
        raw = {_text(k): _text(v) for k, v in self._client.hgetall(self.key).items()}
        offsets = {int(k): int(v) for k, v in raw.items() if k.isdigit()}
        binding = None
        if _CLUSTER in raw and _TOPIC_ID in raw:
            binding = Binding(raw[_CLUSTER], raw[_TOPIC_ID])
        return Progress(offsets, binding)

    def bind(self, binding: Binding) -> None:
        """Records which cluster and topic incarnation the progress belongs to."""
        self._client.hset(
            self.key, mapping={_CLUSTER: binding.cluster_id, _TOPIC_ID: binding.topic_id}
        )

    def advance(self, offsets: Mapping[int, int]) -> None:
        """Records that every record up to ``offsets[p]`` of partition ``p`` was handled."""
        if offsets:
            self._client.hset(self.key, mapping={str(p): o for p, o in offsets.items()})

    def forget_topic(self, dry_run: bool = False) -> Forgotten:
        """Clears the topic's progress, its watermarks in every collection, its dead-letter marks
        (with ``dry_run``, only counts what it would clear).

        Exact fields only: ``<topic>:<partition>`` of each collection's ``applied`` hash and of
        the dead-letter ``done`` hash; no key is deleted by a pattern.
        """
        catalog = self._client.hgetall(CATALOG).items()
        units = [unit for name, raw in catalog for unit in catalog_units(_text(name), raw)]
        cleared = touched = 0
        for name in units:
            applied = CollectionKeys(name).applied
            fields = self._fields_of_topic(self._client.hkeys(applied))
            if fields:
                cleared += len(fields) if dry_run else int(self._client.hdel(applied, *fields))
                touched += 1
        if dry_run:
            return Forgotten(cleared, touched)
        done = self._fields_of_topic(self._client.hkeys(DONE))
        if done:
            self._client.hdel(DONE, *done)
        self._client.delete(self.key)
        return Forgotten(cleared, touched)

    def _fields_of_topic(self, fields: Iterable[bytes | str]) -> list[str]:
        prefix = f"{self.topic}:"
        return [
            text
            for text in map(_text, fields)
            if text.startswith(prefix) and text[len(prefix) :].isdigit()
        ]


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
