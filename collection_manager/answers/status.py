"""The answer of ``status`` (``/api/v1/status``, ``status --format json``): the consumer of a
topic, the controller of a namespace, the dead letters that could not be published, and
where each collection stands.

Nothing here claims a dead process runs: a state is ``stopped`` once the heartbeat key
expired, ``unknown`` when there never was one (``reading/status.py``)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from collection_manager.answers.fields import Doc
from collection_manager.answers.models import BucketRows

KafkaState = Literal["reachable", "unreachable", "not running", "not configured"]


@dataclasses.dataclass(frozen=True)
class PartitionLag:
    """Records of a partition the consumer has yet to read."""

    topic: str
    partition: Annotated[int, Doc(minimum=0)]
    lag: int


@dataclasses.dataclass(frozen=True)
class ConsumerStatus:
    """The consumer of a topic, from its record and heartbeat in Redis and Kafka's offsets."""

    topic: str
    state: Annotated[
        str, Doc("running, retrying (an outage), stopped (its heartbeat expired) or unknown.")
    ]
    state_since_ms: int | None
    retries: Annotated[int, Doc("Retries of the outage it is in.")]
    outage_cause: str | None
    last_seen_ms: Annotated[int | None, Doc("Its last heartbeat.")]
    pid: int | None
    host: str | None
    kafka: KafkaState
    kafka_detail: Annotated[str | None, Doc("Why the lag is unknown; null: Kafka answered.")]
    batches: int
    dead_letters: int
    control_requests: int
    processed_rows_per_s: float | None
    last_batch_id: int | None
    last_progress_ms: int | None
    lag_total: Annotated[int | None, Doc("null unless Kafka is reachable.")]
    lag: Annotated[tuple[PartitionLag, ...] | None, Doc("null unless Kafka is reachable.")]
    rewinds: Annotated[int, Doc("Starts that read again what Redis lost.")]
    topic_recreations: int
    last_rewind: Mapping[str, Any] | None


@dataclasses.dataclass(frozen=True)
class ControllerStatus:
    """The controller of a namespace, as its heartbeat tells, and its last lease check."""

    namespace: str
    state: Literal["running", "stopped", "unknown"]
    last_seen_ms: int | None
    last_check_ms: int | None
    pid: int | None
    host: str | None


@dataclasses.dataclass(frozen=True)
class UnpublishedLetter:
    """A dead letter the consumer could not publish to the dead-letter topic."""

    topic: str
    partition: int
    offset: int
    error: str
    publish_error: str
    reason: str


@dataclasses.dataclass(frozen=True)
class Unpublished:
    """Dead letters that could not be published: how many, and the newest first."""

    count: Annotated[int, Doc(minimum=0)]
    newest: tuple[UnpublishedLetter, ...]


@dataclasses.dataclass(frozen=True)
class CollectionStatus:
    """Where a collection stands (a bucketed one: its buckets' sums, and each bucket's)."""

    name: str
    rows: Annotated[int, Doc(minimum=0)]
    time: int
    counters: Mapping[str, int]
    buckets: Annotated[int, Doc(minimum=1)]
    bucket_column: str | None
    bucket_rows: tuple[BucketRows, ...]


@dataclasses.dataclass(frozen=True)
class SinkStatus:
    """A sink (docs/concepts/sinks.md) and its process, as its heartbeat tells."""

    name: str
    collection: str
    topic: str
    state: Annotated[
        Literal["running", "stopped", "unknown"],
        Doc("running; stopped (its heartbeat expired); unknown (it never ran)."),
    ]
    position: Annotated[str | None, Doc("How far it published: a time, or a cut.")]
    behind: Annotated[int | None, Doc("How far the collection is ahead, in its times.")]


@dataclasses.dataclass(frozen=True)
class Status:
    """What ``status`` shows."""

    consumer: ConsumerStatus
    controller: Annotated[ControllerStatus | None, Doc("null: not read.")]
    other_topics: Annotated[tuple[str, ...], Doc("Topics of the other consumers recorded.")]
    unpublished_dead_letters: Unpublished
    collections: tuple[CollectionStatus, ...]
    sinks: tuple[SinkStatus, ...]
