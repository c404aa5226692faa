"""``collection-manager status``: what the consumer did and where each collection stands."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

import redis
from confluent_kafka import KafkaException

from collection_manager import devservices
from collection_manager.cli.output import CREATE_HINT, TableView, add_format_option, plural, show
from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, from_env
from collection_manager.config.services import load_services
from collection_manager.core.errors import UnknownCollectionError
from collection_manager.core.specs import CollectionSpec
from collection_manager.kafka.lag import lag_now
from collection_manager.storage.client import redis_client
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.dead_letters import DeadLetterLedger, UnpublishedLetter
from collection_manager.storage.heartbeats import CONSUMER, CONTROLLER, Liveness, read_liveness
from collection_manager.storage.keys import CONSUMER_PREFIX, consumer_key
from collection_manager.storage.store import RedisStore
from schemas.introspection import introspection_spec

logger = logging.getLogger(__name__)

_TOTALS = ("batches", "dead_letters", "control_requests")
# How many of the newest unpublished dead letters status shows.
UNPUBLISHED_SHOWN = 5
_UNPUBLISHED_COLUMNS = ("topic", "partition", "offset", "error", "publish_error", "reason")


@dataclasses.dataclass(frozen=True)
class BucketInfo:
    """Where one bucket of a bucketed collection stands: distinct rows, latest time."""

    bucket: int
    rows: int
    time: int


@dataclasses.dataclass(frozen=True)
class CollectionInfo:
    """Where a collection stands: distinct rows, latest readable time, apply counters, and
    how many rows have a TTL and when the next of them expires (ms; None: no such row).

    A bucketed collection's figures are its buckets' sums (its time: the sum of theirs,
    as its cut's total), and ``buckets`` holds each bucket's; empty when unbucketed.
    """

    spec: CollectionSpec
    rows: int
    time: int
    counters: dict[str, int]
    ttl_rows: int = 0
    next_expiry: int | None = None
    buckets: tuple[BucketInfo, ...] = ()


def collection_info(store: RedisStore, name: str) -> CollectionInfo:
    """Reads ``name``'s size, time and counters (every counter present, 0 when never set),
    unit by unit: the collection, or each of its buckets (at most ``MAX_BUCKETS``)."""
    spec = store.spec(name)
    counters = dict.fromkeys(SHOWN_COUNTERS, 0)
    ttl_rows, expiries, buckets = 0, [], []
    for unit in spec.units():
        rows, time = store.size(unit.name)
        stats = store.stats(unit.name)
        for counter in SHOWN_COUNTERS:
            counters[counter] += stats.get(counter, 0)
        unit_ttl_rows, next_expiry = store.ttl_summary(unit.name)
        ttl_rows += unit_ttl_rows
        expiries += [] if next_expiry is None else [next_expiry]
        if unit.bucket is not None:
            buckets.append(BucketInfo(unit.bucket, rows, time))
    rows = sum(b.rows for b in buckets) if buckets else rows
    time = sum(b.time for b in buckets) if buckets else time
    next_expiry = min(expiries, default=None)
    return CollectionInfo(spec, rows, time, counters, ttl_rows, next_expiry, tuple(buckets))


def buckets_json(info: CollectionInfo) -> dict[str, Any]:
    """A bucketed collection's ``{"buckets": N, "bucket_column", "bucket_rows": [{"bucket",
    "rows", "time"}]}``; nothing for an unbucketed one, whose JSON stays as it was."""
    if info.spec.buckets == 1:
        return {}
    return {
        "buckets": info.spec.buckets,
        "bucket_column": info.spec.bucket_column,
        "bucket_rows": [dataclasses.asdict(bucket) for bucket in info.buckets],
    }


def bucket_table(infos: Sequence[CollectionInfo]) -> TableView:
    """The rows and time of each bucket of the bucketed collections: at most
    ``MAX_BUCKETS`` lines per collection."""
    return TableView(
        "rows per bucket of the bucketed collections",
        ["collection", "bucket", "rows", "time"],
        [(i.spec.name, b.bucket, b.rows, b.time) for i in infos for b in i.buckets],
        "no bucketed collections",
    )


def collection_infos(store: RedisStore) -> list[CollectionInfo]:
    """Every collection's info; one dropped between the listing and its reads is left out
    (a listing beside a running drop must not fail)."""
    infos = []
    for name in store.collections():
        try:
            infos.append(collection_info(store, name))
        except UnknownCollectionError:
            continue
    return infos


def counter_headers() -> list[str]:
    """The counters as table headers."""
    return [name.replace("_", " ") for name in SHOWN_COUNTERS]


def _json_object(text: str | None) -> dict[str, Any]:
    try:
        value = json.loads(text or "{}")
    except ValueError:  # written by another version: show what can be shown
        return {}
    return value if isinstance(value, dict) else {}


def _lag(lag: Mapping[str, Any]) -> list[dict[str, Any]]:
    entries = []
    for key, behind in lag.items():
        topic, _, partition = key.rpartition(":")
        if partition.isdigit():
            entries.append({"topic": topic, "partition": int(partition), "lag": int(behind)})
    return sorted(entries, key=lambda e: (e["topic"], e["partition"]))


def read_offsets_of(raw: Mapping[str, str]) -> dict[str, int]:
    """What the consumer's last batch read up to, per ``topic:partition``."""
    read = _json_object(raw.get("progress")).get("read") or {}
    return {key: int(offset) for key, offset in read.items()}


# Why the lag is unknown, per state of Kafka other than reachable.
_KAFKA_DETAILS = {
    "unreachable": "Kafka does not answer",
    "not running": "the local Kafka that `collection-manager infra up` started is not "
    "running; `infra up` starts it again",
    "not configured": "no Kafka: set CM_KAFKA_BOOTSTRAP, or start one with "
    "`collection-manager infra up`",
}


def consumer_summary(
    raw: Mapping[str, str],
    lag_now: Mapping[str, int] | None = None,
    kafka: str = "reachable",
    topic: str = "cm.requests",
    liveness: Liveness | None = None,
) -> dict[str, Any]:
    """The record in Redis of the consumer of ``topic`` (``cm:consumer:<topic>``) as the
    stable JSON of ``status``.

    Args:
        lag_now: Kafka's offsets now minus what the consumer last read, when Kafka
            answered; None when it was not asked (the lag of the last batch is shown).
        kafka: ``reachable``, ``unreachable``, ``not running`` (the local broker ``infra
            up`` started is gone) or ``not configured``; the lag is unknown (null) unless
            Kafka is reachable, and ``kafka_detail`` says why.
        liveness: the consumer's heartbeat (``storage/heartbeats.py``). Unless it beats,
            the state is ``stopped`` (since its last beat) or ``unknown`` (it never beat),
            whatever state it last wrote.
    """
    progress = _json_object(raw.get("progress"))
    health = _json_object(raw.get("health"))
    lag = _lag(progress.get("lag") or {} if lag_now is None else lag_now)
    known = kafka == "reachable"
    last = (liveness.last if liveness else None) or {}
    if liveness is None or liveness.alive:
        beating = liveness is not None or bool(progress)  # it beats, or it reported progress
        state = {
            "state": health.get("state", "running" if beating else "unknown"),
            "state_since_ms": health.get("since_ms"),
            "retries": int(health.get("retries", 0)),
            "outage_cause": health.get("cause") or None,
        }
    else:
        state = {
            "state": liveness.state,
            "state_since_ms": last.get("at_ms"),
            "retries": 0,
            "outage_cause": None,
        }
    return {
        "topic": topic,
        **state,
        "last_seen_ms": last.get("at_ms"),
        "pid": last.get("pid"),
        "host": last.get("host"),
        "kafka": kafka,
        "kafka_detail": None if known else _KAFKA_DETAILS.get(kafka, kafka),
        **{name: int(raw.get(name, 0)) for name in _TOTALS},
        "processed_rows_per_s": progress.get("processed_rows_per_s"),
        "last_batch_id": progress.get("batch_id"),
        "last_progress_ms": _epoch_ms(progress.get("timestamp")),
        "lag_total": sum(entry["lag"] for entry in lag) if known else None,
        "lag": lag if known else None,
        # Starts that read again what Redis lost, and re-created topics (docs/operations.md).
        "rewinds": int(raw.get("rewinds", 0)),
        "topic_recreations": int(raw.get("topic_recreations", 0)),
        "last_rewind": _json_object(raw.get("last_rewind")) or None,
    }


def controller_summary(namespace: str, liveness: Liveness) -> dict[str, Any]:
    """The controller of ``namespace`` as its heartbeat tells: ``running``, ``stopped``
    (since its last beat) or ``unknown`` (it never beat), and its last lease check."""
    last = liveness.last or {}
    return {
        "namespace": namespace,
        "state": liveness.state,
        "last_seen_ms": last.get("at_ms"),
        "last_check_ms": last.get("last_check_ms"),
        "pid": last.get("pid"),
        "host": last.get("host"),
    }


def unpublished_summary(count: int, newest: Sequence[UnpublishedLetter]) -> dict[str, Any]:
    """Dead letters that could not be published: how many, and the newest (newest first)."""
    return {
        "count": count,
        "newest": [
            {name: getattr(letter, name) for name in _UNPUBLISHED_COLUMNS} for letter in newest
        ],
    }


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
) -> dict[str, Any]:
    """``{"consumer": {...}, "controller": {...}, "other_topics": [...],
    "unpublished_dead_letters": {"count", "newest"}, "collections": [{"name", "rows",
    "time", "counters"}]}``; a bucketed collection's rows and time are its buckets' sums,
    and its entry also has ``"buckets", "bucket_column", "bucket_rows"`` (``buckets_json``)."""
    return {
        "consumer": consumer,
        "controller": controller,
        "other_topics": list(other_topics),
        "unpublished_dead_letters": unpublished,
        "collections": [
            {
                "name": i.spec.name,
                "rows": i.rows,
                "time": i.time,
                "counters": i.counters,
                **buckets_json(i),
            }
            for i in infos
        ],
    }


def controller_table(controller: dict[str, Any]) -> TableView:
    """The controller's state and its last lease check; a line when it never ran."""
    title = f"controller of {controller['namespace']}"
    if controller["state"] == "unknown":
        line = (
            "never seen: without `collection-manager controller run`, no lease expires "
            "and a dead replica's rows stay"
        )
        return TableView(title, [], [], line)
    state = "running" if controller["state"] == "running" else _stopped(controller["last_seen_ms"])
    check = controller["last_check_ms"]
    row = (
        state,
        None if check is None else _utc(check),
        f"{controller['pid']}@{controller['host']}",
    )
    return TableView(title, ["state", "last lease check", "process"], [row], "", null="-")


def unpublished_table(unpublished: dict[str, Any]) -> TableView:
    """The newest dead letters that could not be published, under their total count."""
    count = unpublished["count"]
    return TableView(
        f"{plural(count, 'dead letter')} could not be published (newest first; "
        "see docs/operations.md, Dead letters)",
        [name.replace("_", " ") for name in _UNPUBLISHED_COLUMNS],
        [tuple(entry[name] for name in _UNPUBLISHED_COLUMNS) for entry in unpublished["newest"]],
        "their records were removed from Redis",
    )


def _state(consumer: dict[str, Any]) -> str:
    if consumer["state"] == "stopped":
        return _stopped(consumer["state_since_ms"])
    if consumer["state"] != "retrying":
        return str(consumer["state"])
    since = consumer["state_since_ms"]
    when = "" if since is None else f" since {_utc(since)}"
    return f"retrying{when} ({consumer['retries']} retries): {consumer['outage_cause']}"


def _epoch_ms(iso: object) -> int | None:
    """Spark's progress timestamp (ISO 8601, UTC) as ms since the Unix epoch, as every time
    in the JSON is."""
    if not isinstance(iso, str):
        return None
    try:
        return int(datetime.datetime.fromisoformat(iso).timestamp() * 1000)
    except ValueError:
        return None


def _stopped(last_seen_ms: int | None) -> str:
    return "stopped" if last_seen_ms is None else f"stopped (last seen {_utc(last_seen_ms)})"


def _utc(ms: int) -> str:
    return datetime.datetime.fromtimestamp(ms / 1000, datetime.UTC).strftime("%Y-%m-%d %H:%M:%SZ")


def status_tables(
    consumer: dict[str, Any],
    infos: Sequence[CollectionInfo],
    recorded: bool,
    unpublished: dict[str, Any] | None = None,
    other_topics: Sequence[str] = (),
    controller: dict[str, Any] | None = None,
) -> list[TableView]:
    """The consumer (when it recorded anything), its lag, the controller (when asked), the
    consumers of other topics (when any), the dead letters that could not be published
    (when any), the collections, and the rows per bucket of the bucketed ones (when any)."""
    tables = []
    if recorded:
        rate = consumer["processed_rows_per_s"]
        lag = consumer["lag_total"]
        row = (
            _state(consumer),
            *(consumer[name] for name in _TOTALS),
            None if rate is None else round(rate),
            f"unknown: {consumer['kafka_detail']}" if lag is None else lag,
            None if consumer["last_progress_ms"] is None else _utc(consumer["last_progress_ms"]),
        )
        columns = [
            "state",
            "batches",
            "dead letters",
            "control requests",
            "rows/s",
            "lag",
            "progress at",
        ]
        title = f"consumer of {consumer['topic']}"
        tables.append(TableView(title, columns, [row], "", null="-"))
        if consumer["last_rewind"]:
            last = consumer["last_rewind"]
            tables.append(
                TableView(
                    "read again from Redis's progress",
                    ["rewinds", "topic re-creations", "last at", "why"],
                    [
                        (
                            consumer["rewinds"],
                            consumer["topic_recreations"],
                            _utc(int(last.get("at_ms", 0))),
                            last.get("reason"),
                        )
                    ],
                    "",
                )
            )
        if consumer["lag"] is not None:
            tables.append(
                TableView(
                    "Kafka lag per partition",
                    ["topic", "partition", "lag"],
                    [(e["topic"], e["partition"], e["lag"]) for e in consumer["lag"]],
                    "lag per partition: not reported yet (the consumer reports it after a batch)",
                )
            )
    else:
        line = "consumer: nothing recorded yet (is `collection-manager consume` running?)"
        tables.append(TableView("consumer", [], [], line))
    if controller is not None:
        tables.append(controller_table(controller))
    if other_topics:
        title = "consumers of other topics in this Redis (status --topic T)"
        tables.append(TableView(title, ["topic"], [(t,) for t in other_topics], ""))
    if unpublished is not None and unpublished["count"] > 0:
        tables.append(unpublished_table(unpublished))
    tables.append(
        TableView(
            plural(len(infos), "collection"),
            ["collection", "rows", "time", *counter_headers()],
            [
                (i.spec.name, i.rows, i.time, *(i.counters[c] for c in SHOWN_COUNTERS))
                for i in infos
            ],
            f"no collections yet; {CREATE_HINT}",
        )
    )
    if any(i.buckets for i in infos):
        tables.append(bucket_table(infos))
    return tables


EXAMPLE_CONSUMER = consumer_summary(
    {
        "batches": "12",
        "dead_letters": "1",
        "control_requests": "4",
        "progress": json.dumps(
            {
                "batch_id": 11,
                "processed_rows_per_s": 250.0,
                "timestamp": "2025-01-01T12:00:00.000Z",
                "lag": {"cm.requests:0": 3, "cm.requests:1": 0},
            }
        ),
    }
)
EXAMPLE_UNPUBLISHED = unpublished_summary(
    1,
    [
        UnpublishedLetter(
            "cm.requests",
            0,
            1234,
            "OversizedRequestError",
            "request of 1500000 bytes exceeds the limit of 1048576 bytes",
            "MSG_SIZE_TOO_LARGE",
            "Broker: Message size too large",
            1_735_732_800_000,
        )
    ],
)


EXAMPLE_CONTROLLER = controller_summary(
    "cm:replicas",
    Liveness(
        True,
        {
            "at_ms": 1_735_732_801_000,
            "last_check_ms": 1_735_732_800_500,
            "pid": 4242,
            "host": "ops-1",
        },
    ),
)


def example_bucketed(counters: dict[str, int]) -> CollectionInfo:
    """The help's example of a collection of four buckets by ``replica_id``, its two rows in
    bucket 1 (the times those of ``query``'s example cut)."""
    spec = dataclasses.replace(
        introspection_spec("compute_frontiers"), name="frontiers_by_replica", buckets=4
    )
    times = (12, 40, 7, 9)
    buckets = tuple(BucketInfo(b, 2 if b == 1 else 0, t) for b, t in enumerate(times))
    return CollectionInfo(spec, 2, sum(times), counters, buckets=buckets)


def register(commands: Any) -> None:
    """Adds ``status``."""
    parser = commands.add_parser("status", help="consumer progress, lag and collection counters")
    counters = dict.fromkeys(SHOWN_COUNTERS, 0) | {"requests": 3, "updates": 4}
    infos = [
        CollectionInfo(introspection_spec("compute_frontiers"), 2, 42, counters),
        example_bucketed(counters),
    ]
    example = status_json(EXAMPLE_CONSUMER, EXAMPLE_UNPUBLISHED, infos, (), EXAMPLE_CONTROLLER)
    add_format_option(parser, {"status": example})
    parser.add_argument(
        "--topic",
        help="the consumer of this request topic (default CM_TOPIC); consumers of other "
        "topics in the same Redis are listed under other_topics",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Prints the consumer's progress and lag, the dead letters it could not publish, and
    each collection's counters. Needs only Redis: with Kafka down the lag is unknown."""
    infra = from_env(InfraConfig)
    endpoints = devservices.running(infra, needs=("redis",))
    store = RedisStore.connect(endpoints.redis_url)
    topic = args.topic or from_env(ConsumerConfig).topic
    client = redis_client(endpoints.redis_url, decode_responses=True)
    try:
        raw = cast(dict[str, str], client.hgetall(consumer_key(topic)))
        recorded = {
            key.removeprefix(CONSUMER_PREFIX) for key in client.scan_iter(CONSUMER_PREFIX + "*")
        }
        unpublished = read_unpublished(client)
    finally:
        client.close()
    namespace = from_env(ReplicaConfig).replica_namespace
    liveness_client = redis_client(endpoints.redis_url)
    try:
        consumer_liveness = read_liveness(liveness_client, CONSUMER, topic)
        controller = controller_summary(
            namespace, read_liveness(liveness_client, CONTROLLER, namespace)
        )
    finally:
        liveness_client.close()
    live, kafka = None, "not configured"
    if not endpoints.kafka_bootstrap and "kafka" in load_services(infra.services_file):
        kafka = "not running"
    if endpoints.kafka_bootstrap:
        try:
            live, kafka = lag_now(endpoints.kafka_bootstrap, read_offsets_of(raw)), "reachable"
        except KafkaException as exc:
            logger.info("Kafka did not answer: %s", exc)
            kafka = "unreachable"
    consumer = consumer_summary(raw, live, kafka, topic, consumer_liveness)
    infos = collection_infos(store)
    others = sorted(recorded - {topic})
    show(
        args.format,
        status_json(consumer, unpublished, infos, others, controller),
        *status_tables(consumer, infos, bool(raw), unpublished, others, controller),
        headers=not args.no_headers,
    )
    return 0
