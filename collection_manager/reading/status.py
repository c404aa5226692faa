"""What ``status`` answers, as data: the consumer of a topic (its state, heartbeat, batches,
dead letters and Kafka lag), the controller, the dead letters that could not be published,
and where each collection stands (``catalog.py``) and each sink (``sinks.py``).
``collection-manager status`` prints it as tables or JSON; ``collection-manager server
run`` answers it at ``/api/v1/status``.

Nothing here claims a dead process runs: a consumer or controller without a live heartbeat
key is ``stopped`` (or ``unknown``), whatever state it last wrote (``storage/heartbeats.py``).
"""

from __future__ import annotations

import dataclasses
import datetime
import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import redis
from confluent_kafka import KafkaException

from collection_manager.answers import to_json
from collection_manager.answers.status import (
    CollectionStatus,
    ConsumerStatus,
    ControllerStatus,
    PartitionLag,
    Unpublished,
)
from collection_manager.answers.status import UnpublishedLetter as Letter
from collection_manager.config.services import load_services
from collection_manager.kafka.lag import lag_now
from collection_manager.reading.catalog import CollectionInfo, collection_infos
from collection_manager.reading.sinks import read_sinks
from collection_manager.storage.client import as_text
from collection_manager.storage.consumer_status import ConsumerRecord, ConsumerStatusRecord
from collection_manager.storage.dead_letters import DeadLetterLedger, UnpublishedLetter
from collection_manager.storage.heartbeats import (
    CONSUMER,
    CONTROLLER,
    Liveness,
    read_liveness,
)
from collection_manager.storage.keys import CONSUMER_PREFIX
from collection_manager.storage.store import RedisStore

logger = logging.getLogger(__name__)

# The consumer's running totals, as status's JSON names them.
TOTALS = ("batches", "dead_letters", "control_requests")
# How many of the newest unpublished dead letters status shows.
UNPUBLISHED_SHOWN = 5
UNPUBLISHED_COLUMNS = ("topic", "partition", "offset", "error", "publish_error", "reason")


def _lag(lag: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = []
    for key, behind in lag.items():
        topic, _, partition = key.rpartition(":")
        if partition.isdigit():
            entries.append({"topic": topic, "partition": int(partition), "lag": int(behind)})
    return sorted(entries, key=lambda e: (e["topic"], e["partition"]))


# Why the lag is unknown, per state of Kafka other than reachable.
_KAFKA_DETAILS = {
    "unreachable": "Kafka does not answer",
    "not running": "the local Kafka that `collection-manager infra up` started is not "
    "running; `infra up` starts it again",
    "not configured": "no Kafka: set CM_KAFKA_BOOTSTRAP, or start one with "
    "`collection-manager infra up`",
}


def consumer_summary(
    record: ConsumerRecord,
    lag_now: Mapping[str, int] | None = None,
    kafka: str = "reachable",
    topic: str = "cm.requests",
    liveness: Liveness | None = None,
) -> dict[str, Any]:
    """The consumer's record (``ConsumerRecord``) as the stable JSON of ``status``.

    Args:
        lag_now: Kafka's offsets now minus what the consumer last read, when Kafka
            answered; None when it was not asked (the lag of the last batch is shown).
        kafka: ``reachable``, ``unreachable``, ``not running`` (the local broker ``infra
            up`` started is gone) or ``not configured``; the lag is unknown (null) unless
            Kafka is reachable, and ``kafka_detail`` says why.
        liveness: the consumer's heartbeat (``storage/heartbeats.py``). Unless it beats,
            the state is ``stopped`` (since its last beat) or ``unknown`` (never beat).
    """
    progress = record.progress
    known = kafka == "reachable"
    last = (liveness.last if liveness else None) or {}
    summary = {
        "topic": topic,
        **_state(record.health, progress, liveness),
        **{"last_seen_ms": last.get("at_ms"), "pid": last.get("pid"), "host": last.get("host")},
        "kafka": kafka,
        "kafka_detail": None if known else _KAFKA_DETAILS.get(kafka, kafka),
        "batches": record.batches,
        "dead_letters": record.dead_letters,
        "control_requests": record.control_requests,
        "processed_rows_per_s": progress.get("processed_rows_per_s"),
        "last_batch_id": progress.get("batch_id"),
        "last_progress_ms": _epoch_ms(progress.get("timestamp")),
        **_lag_fields(progress.get("lag") or {} if lag_now is None else lag_now, known),
        # Starts that read again what Redis lost, and re-created topics (docs/operations.md).
        "rewinds": record.rewinds,
        "topic_recreations": record.topic_recreations,
        "last_rewind": record.last_rewind or None,
    }
    return to_json(ConsumerStatus(**summary))


def _lag_fields(behind: Mapping[str, Any], known: bool) -> dict[str, Any]:
    """``lag_total`` and ``lag`` per partition, both None when Kafka's offsets are unknown."""
    if not known:
        return {"lag_total": None, "lag": None}
    lag = _lag(behind)
    return {
        "lag_total": sum(entry["lag"] for entry in lag),
        "lag": tuple(PartitionLag(**entry) for entry in lag),
    }


def _state(
    health: Mapping[str, Any], progress: Mapping[str, Any], liveness: Liveness | None
) -> dict[str, Any]:
    """The consumer's state: what it last wrote while it beats (or, with no heartbeat to
    go by, while it reports progress), else its heartbeat's state since its last beat."""
    if liveness is None or liveness.alive:
        beating = liveness is not None or bool(progress)  # it beats, or it reported progress
        return {
            "state": health.get("state", "running" if beating else "unknown"),
            "state_since_ms": health.get("since_ms"),
            "retries": int(health.get("retries", 0)),
            "outage_cause": health.get("cause") or None,
        }
    return {
        "state": liveness.state,
        "state_since_ms": (liveness.last or {}).get("at_ms"),
        "retries": 0,
        "outage_cause": None,
    }


def controller_summary(namespace: str, liveness: Liveness) -> dict[str, Any]:
    """The controller of ``namespace`` as its heartbeat tells: ``running``, ``stopped``
    (since its last beat) or ``unknown`` (it never beat), and its last lease check."""
    last = liveness.last or {}
    controller = ControllerStatus(
        namespace,
        liveness.state,  # type: ignore[arg-type]  # a heartbeat's states are the model's
        last.get("at_ms"),
        last.get("last_check_ms"),
        last.get("pid"),
        last.get("host"),
    )
    return to_json(controller)


def unpublished_summary(count: int, newest: Sequence[UnpublishedLetter]) -> dict[str, Any]:
    """Dead letters that could not be published: how many, and the newest (newest first)."""
    letters = tuple(
        Letter(**{name: getattr(letter, name) for name in UNPUBLISHED_COLUMNS}) for letter in newest
    )
    return to_json(Unpublished(count, letters))


def read_unpublished(client: redis.Redis, limit: int = UNPUBLISHED_SHOWN) -> dict[str, Any]:
    """The consumer's record of unpublished dead letters, as ``unpublished_summary``."""
    ledger = DeadLetterLedger(client)
    return unpublished_summary(ledger.counts()["unpublished"], ledger.recent_unpublished(limit))


def status_json(
    consumer: dict[str, Any],
    unpublished: dict[str, Any],
    infos: Sequence[CollectionInfo],
    other_topics: Sequence[str] = (),
    controller: dict[str, Any] | None = None,
    sinks: Sequence[dict[str, Any]] = (),
) -> dict[str, Any]:
    """The JSON of ``status`` (answers.status.Status): the consumer's, the controller's
    and the unpublished dead letters' summaries above, and each collection (a bucketed
    one's rows and time its buckets' sums, with each bucket's rows and time)."""
    collections = [
        to_json(
            CollectionStatus(
                i.spec.name,
                i.rows,
                i.time,
                i.counters,
                i.spec.buckets,
                i.spec.bucket_column if i.spec.buckets > 1 else None,
                i.buckets,
            )
        )
        for i in infos
    ]
    return {
        "consumer": consumer,
        "controller": controller,
        "other_topics": list(other_topics),
        "unpublished_dead_letters": unpublished,
        "collections": collections,
        "sinks": list(sinks),
    }


def _epoch_ms(iso: object) -> int | None:
    """Spark's progress timestamp (ISO 8601, UTC) as ms since the Unix epoch, as every time
    in the JSON is."""
    if not isinstance(iso, str):
        return None
    try:
        return int(datetime.datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return None


@dataclasses.dataclass(frozen=True)
class StatusReport:
    """What ``status`` shows: ``record`` is the consumer's record as Redis holds it,
    ``others`` the topics of the other consumers recorded there."""

    consumer: dict[str, Any]
    controller: dict[str, Any]
    unpublished: dict[str, Any]
    infos: list[CollectionInfo]
    others: list[str]
    record: ConsumerRecord
    sinks: list[dict[str, Any]] = dataclasses.field(default_factory=list)

    def json(self) -> dict[str, Any]:
        """The JSON of ``status --format json``."""
        return status_json(
            self.consumer, self.unpublished, self.infos, self.others, self.controller, self.sinks
        )


def read_status(
    client: redis.Redis,
    kafka_bootstrap: str | None,
    topic: str,
    namespace: str,
    services_file: Path | None = None,
) -> StatusReport:
    """Reads what ``status`` shows of the consumer of ``topic`` and the controller of
    ``namespace``. Needs only Redis: with Kafka down (or ``kafka_bootstrap`` None) the lag
    is unknown and the report says why.

    Args:
        client: the Redis of the pipeline (responses decoded or not).
        services_file: the record of the services ``infra up`` started, which tells a
            local broker that stopped from none configured.
    """
    record = ConsumerStatusRecord(client, topic).read()
    recorded = {
        as_text(key).removeprefix(CONSUMER_PREFIX)
        for key in client.scan_iter(CONSUMER_PREFIX + "*")
    }
    unpublished = read_unpublished(client)
    consumer_liveness = read_liveness(client, CONSUMER, topic)
    controller = controller_summary(namespace, read_liveness(client, CONTROLLER, namespace))
    live, kafka = _lag_now(kafka_bootstrap, record, topic, services_file)
    consumer = consumer_summary(record, live, kafka, topic, consumer_liveness)
    infos = collection_infos(RedisStore(client))
    others = sorted(recorded - {topic})
    return StatusReport(
        consumer, controller, unpublished, infos, others, record, read_sinks(client)
    )


def _lag_now(
    kafka_bootstrap: str | None, record: ConsumerRecord, topic: str, services_file: Path | None
) -> tuple[dict[str, int] | None, str]:
    """Kafka's offsets now minus what the consumer last read (None unless Kafka answered),
    and the state of Kafka, as ``consumer_summary`` takes them."""
    if not kafka_bootstrap:
        recorded_broker = services_file is not None and "kafka" in load_services(services_file)
        return None, "not running" if recorded_broker else "not configured"
    try:
        return lag_now(kafka_bootstrap, record.read_offsets(), topic=topic), "reachable"
    except KafkaException as exc:
        logger.info("Kafka did not answer: %s", exc)
        return None, "unreachable"
