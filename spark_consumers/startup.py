"""The start of a streaming query: check what Redis's progress belongs to, choose where to read.

Run on the driver at every start of the query, also after an outage (``run_consumer``).
Redis is the source of truth for progress (``collection_manager/storage/progress.py``):

- progress written for another Kafka cluster: stop (``ProgressMismatchError``) with the
  command that resets it on purpose;
- the topic was deleted and created again (same cluster and name, new topic id): its
  offsets start again at 0, so the old topic's progress, watermarks and dead-letter marks
  are cleared (logged and counted), and the new topic is read from its start;
- Redis holds less progress than Spark's checkpoint: a fresh checkpoint at Redis's
  progress, so what Redis lost is read again (the watermarks skip what it kept).

While the query runs, ``DriverProgress`` refuses a batch when Redis was restarted or the
topic re-created since the start, and records the progress of every batch it ran.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Iterable
from typing import Any

import redis
from confluent_kafka.admin import AdminClient

from collection_manager.kafka.identity import TopicIdentity, topic_identity
from collection_manager.storage.consumer_status import (
    REWINDS,
    TOPIC_RECREATIONS,
    ConsumerStatusRecord,
)
from collection_manager.storage.progress import (
    Binding,
    Progress,
    ProgressRecord,
    guarded_client,
    run_id,
)
from collection_manager.storage.replication import replicated
from spark_consumers.checkpoint import SparkCheckpoint
from spark_consumers.errors import ConsumerError, ProgressMismatchError
from spark_consumers.positions import (
    behind,
    describe_behind,
    mismatch,
    recreated,
    starting_offsets,
)
from spark_consumers.steps import StepTimer

logger = logging.getLogger(__name__)

# Fields of the consumer's metrics hash (``status`` shows them).


@dataclasses.dataclass(frozen=True)
class StartPlan:
    """Where the query starts, and what it was planned against."""

    starting_offsets: str  # Spark's JSON; used only when the checkpoint is empty
    redis_run_id: str
    identity: TopicIdentity


def plan_start(
    spark: Any, checkpoint_dir: str, topic: str, admin: AdminClient, client: redis.Redis
) -> StartPlan:
    """Checks the binding, then clears the checkpoint when it is ahead of Redis.

    Raises:
        ProgressMismatchError: when Redis's progress was written for another Kafka cluster.
    """
    identity = topic_identity(admin, topic)
    redis_run = run_id(client)
    record = ProgressRecord(client, topic)
    progress = record.read()
    now = Binding(identity.cluster_id, identity.topic_id)
    checkpoint = SparkCheckpoint(spark, checkpoint_dir)
    if progress.binding is not None:
        reason = mismatch(topic, progress.binding, identity)
        if reason is not None:
            raise ProgressMismatchError(reason)
    if progress.binding is None or recreated(progress.binding, identity):
        if progress.binding is not None:
            progress = _forget_recreated(client, record, progress.binding, identity)
        record.bind(now)
        if checkpoint.clear():
            logger.warning(
                "started a fresh checkpoint in %s: Redis holds no progress for topic %s "
                "(topic id %s) yet",
                checkpoint_dir,
                topic,
                identity.topic_id,
            )
    else:
        _rewind_if_behind(client, checkpoint, topic, progress)
    return StartPlan(
        starting_offsets(topic, identity.partitions, progress.offsets), redis_run, identity
    )


def _forget_recreated(
    client: redis.Redis, record: ProgressRecord, old: Binding, identity: TopicIdentity
) -> Progress:
    forgotten = record.forget_topic()
    reason = (
        f"topic {record.topic} was deleted and created again (topic id {old.topic_id} is now "
        f"{identity.topic_id}): cleared its progress and {forgotten.watermarks} watermarks in "
        f"{forgotten.collections} collections; reading the new topic from its start"
    )
    logger.warning("%s", reason)
    _count(client, record.topic, TOPIC_RECREATIONS, reason)
    return Progress({}, None)


def _rewind_if_behind(
    client: redis.Redis, checkpoint: SparkCheckpoint, topic: str, progress: Progress
) -> None:
    next_offsets = checkpoint.next_offsets(topic)
    if next_offsets is None:
        # Nothing committed, or not this topic's: nothing is lost by starting afresh.
        checkpoint.clear()
        return
    found = behind(progress.offsets, next_offsets)
    if found:
        reason = describe_behind(topic, found)
        logger.warning("%s", reason)
        checkpoint.clear()
        _count(client, topic, REWINDS, reason)


def _count(client: redis.Redis, topic: str, field: str, reason: str) -> None:
    event = {"kind": field, "at_ms": int(time.time() * 1000), "reason": reason}
    ConsumerStatusRecord(client, topic).count_rewind(field, event)


class DriverProgress:
    """The driver's side of a running query: guard each batch, then record its progress."""

    def __init__(
        self,
        redis_url: str,
        admin: AdminClient,
        topic: str,
        plan: StartPlan,
        replica_acks: int = 0,
        replica_ack_timeout_ms: int = 10_000,
    ) -> None:
        self._client = guarded_client(redis_url, plan.redis_run_id, socket_connect_timeout=5)
        self._replica_acks = replica_acks
        self._replica_ack_timeout_ms = replica_ack_timeout_ms
        self._record = ProgressRecord(self._client, topic)
        self._admin = admin
        self._plan = plan
        self.topic = topic

    def check(self) -> None:
        """Refuses the batch when Redis restarted or the topic was re-created since the start.

        Raises:
            RedisRestartedError: Redis is another process now (it may have lost writes).
            ConsumerError: the topic has another id now.
        """
        self._client.ping()  # a new connection checks Redis's run id (guarded_client)
        now = topic_identity(self._admin, self.topic)
        if now.topic_id != self._plan.identity.topic_id:
            raise ConsumerError(
                f"topic {self.topic} was deleted and created again (topic id "
                f"{self._plan.identity.topic_id} is now {now.topic_id}); starting again"
            )

    def advance(self, summaries: Iterable[Any], timer: StepTimer | None = None) -> None:
        """Records, per partition, the last offset the batch's appliers handled, once the
        replicas required hold the batch's writes (``timer`` gets the two steps' times).

        Raises:
            ReplicasBehindError: they did not confirm in time; nothing was recorded.
        """
        timer = timer or StepTimer()
        with timer.step("replicas"):
            replicated(self._client, self._replica_acks, self._replica_ack_timeout_ms)
        with timer.step("progress"):
            self._record_last(summaries)

    def _record_last(self, summaries: Iterable[Any]) -> None:
        last: dict[int, int] = {}
        for row in summaries:
            partition, offset = int(row["partition"]), int(row["last_offset"])
            last[partition] = max(offset, last.get(partition, -1))
        self._record.advance(last)
