"""What ``status --wait`` waits for: the consumer applying, and everything published so far
applied, so that a script (the README's tour) can start the pipeline in the background and
read right after.

Ready means, in this order:

1. the consumer of the topic beats, is not waiting out an outage, and its streaming query
   recorded a batch's progress since this process started (its heartbeat's
   ``started_ms``), so the built-in collections exist and it applies;
2. every active replica of the namespace had a heartbeat of its epoch applied, so its
   agent publishes;
3. the consumer read the topic up to the offsets Kafka held once 1 and 2 were true: what
   the agents published until then (their snapshots among it) is applied.

The rules are pure (values in, a reason out); :func:`wait_until_ready` reads Redis and
Kafka between them.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import redis
from confluent_kafka import KafkaException

from collection_manager.control.members import ACTIVE
from collection_manager.control.status import ReplicaStatus
from collection_manager.core.errors import CollectionManagerError
from collection_manager.kafka.lag import end_offsets
from collection_manager.reading.replicas import read_replicas
from collection_manager.reading.status import consumer_summary
from collection_manager.storage.consumer_status import ConsumerStatusRecord
from collection_manager.storage.heartbeats import CONSUMER, read_liveness

POLL_S = 0.5


class NotReadyError(CollectionManagerError):
    """The pipeline was not ready within the time given: what it still waited for."""


def consumer_waiting(consumer: Mapping[str, Any], started_ms: int | None) -> str | None:
    """Why the consumer of ``status`` (``consumer_summary``) does not apply yet, or None.

    Args:
        started_ms: when the beating consumer process started (its heartbeat's record);
            a progress or an outage recorded before then was another process'.
    """
    topic = consumer["topic"]
    if consumer["state"] in ("stopped", "unknown") or started_ms is None:
        return f"the consumer of {topic} to start (`collection-manager consumer run`)"
    since = consumer["state_since_ms"]
    if consumer["state"] == "retrying" and since is not None and since >= started_ms:
        return f"the consumer of {topic} to end an outage ({consumer['outage_cause']})"
    progress_ms = consumer["last_progress_ms"]
    if progress_ms is None or progress_ms < started_ms:
        return f"the consumer of {topic} to run its first batch"
    return None


def replicas_waiting(replicas: Sequence[ReplicaStatus]) -> str | None:
    """The active replicas none of whose heartbeats of their epoch was applied yet."""
    silent = [r.replica_id for r in replicas if r.state == ACTIVE and r.last_heartbeat_at is None]
    if not silent:
        return None
    return f"the first heartbeat of replica {', '.join(silent)}"


def offsets_waiting(read: Mapping[str, int], target: Mapping[str, int]) -> str | None:
    """The partitions the consumer has not read up to ``target`` yet (``topic:partition``
    to offset, both), or None."""
    behind = {key: end - read.get(key, 0) for key, end in target.items() if read.get(key, 0) < end}
    if not behind:
        return None
    return f"the consumer to apply {sum(behind.values())} requests published before now"


@dataclasses.dataclass
class _Wait:
    """One ``status --wait``: the offsets it waits for, once the processes run."""

    client: redis.Redis
    kafka_bootstrap: str | None
    topic: str
    namespace: str
    target: dict[str, int] | None = None

    def waiting_for(self) -> str | None:
        """What it still waits for; a service that does not answer is waited for too."""
        try:
            return self._waiting_for()
        except (redis.ConnectionError, redis.TimeoutError) as exc:
            return f"Redis to answer ({exc})"
        except KafkaException as exc:
            return f"Kafka to answer ({exc})"

    def _waiting_for(self) -> str | None:
        # The consumer's record and heartbeat only: status's lag and collections decide
        # nothing here, and are not read at every poll.
        record = ConsumerStatusRecord(self.client, self.topic).read()
        liveness = read_liveness(self.client, CONSUMER, self.topic)
        consumer = consumer_summary(record, topic=self.topic, liveness=liveness)
        started = (liveness.last or {}).get("started_ms")
        reason = consumer_waiting(consumer, started) or replicas_waiting(
            read_replicas(self.client, self.namespace)
        )
        if reason is not None:
            return reason
        if self.target is None:
            if not self.kafka_bootstrap:
                return None  # no Kafka to ask: the processes running is all that is known
            self.target = end_offsets(self.kafka_bootstrap, self.topic)
        return offsets_waiting(record.read_offsets(), self.target)


def wait_until_ready(
    client: redis.Redis,
    kafka_bootstrap: str | None,
    topic: str,
    namespace: str,
    timeout_s: float,
    waiting: Callable[[str], None] = lambda _reason: None,
    clock: Callable[[], float] = time.monotonic,
) -> None:
    """Returns once the pipeline of ``topic`` is ready (the module's rules).

    Args:
        waiting: told each new reason it waits for (the CLI prints it).

    Raises:
        NotReadyError: not ready within ``timeout_s``, naming what it waited for.
    """
    wait = _Wait(client, kafka_bootstrap, topic, namespace)
    deadline, last = clock() + timeout_s, None
    while (reason := wait.waiting_for()) is not None:
        if reason != last:
            waiting(reason)
            last = reason
        if clock() >= deadline:
            raise NotReadyError(
                f"not ready after {timeout_s:g} s (--timeout): waiting for {reason}"
            )
        time.sleep(POLL_S)
