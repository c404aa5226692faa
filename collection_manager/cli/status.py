"""``collection-manager status``: what the consumer did and where each collection stands."""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import json
import sys
from collections.abc import Sequence
from typing import Any

from collection_manager import devservices
from collection_manager.answers.models import BucketRows
from collection_manager.cli.argtypes import seconds_argument
from collection_manager.cli.output import CREATE_HINT, TableView, add_format_option, plural, show
from collection_manager.cli.partitions import bucket_partition
from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, from_env
from collection_manager.core.partitions import assign
from collection_manager.reading.readiness import wait_until_ready
from collection_manager.reading.status import (
    TOTALS,
    UNPUBLISHED_COLUMNS,
    CollectionInfo,
    consumer_summary,
    controller_summary,
    read_status,
    status_json,
    unpublished_summary,
)

# The data parts of status are in reading/status.py, which the HTTP API answers from too;
# these are named here as well, where the CLI's modules and tests have always found them.
from collection_manager.reading.status import collection_info as collection_info
from collection_manager.reading.status import collection_infos as collection_infos
from collection_manager.storage.client import connected_client
from collection_manager.storage.counters import SHOWN_COUNTERS
from collection_manager.storage.dead_letters import UnpublishedLetter
from collection_manager.storage.heartbeats import Liveness
from schemas.introspection import introspection_spec

# The consumer's first start (Spark's JVM, the Kafka source) takes up to a minute on two
# busy cores; --wait allows twice that.
WAIT_TIMEOUT_S = 120.0


def bucket_table(infos: Sequence[CollectionInfo]) -> TableView:
    """The rows, time and Kafka partition of each bucket of the bucketed collections: at
    most ``MAX_BUCKETS`` lines per collection."""
    return TableView(
        "rows per bucket of the bucketed collections",
        ["collection", "bucket", "rows", "time", "partition"],
        [
            (i.spec.name, b.bucket, b.rows, b.time, bucket_partition(i.spec, b.bucket))
            for i in infos
            for b in i.buckets
        ],
        "no bucketed collections",
    )


def shared_partitions_table(infos: Sequence[CollectionInfo]) -> TableView | None:
    """The bucketed collections created on a topic of fewer partitions than they have
    buckets, or None when there are none."""
    shared = [
        (i.spec.name, i.spec.buckets, p.partitions, p.topic)
        for i in infos
        if (p := i.spec.partitioning) is not None and p.shared
    ]
    if not shared:
        return None
    title = (
        "bucketed collections on fewer partitions than buckets: some of their buckets share "
        "a partition, applied one after the other (docs/concepts/buckets.md)"
    )
    return TableView(title, ["collection", "buckets", "partitions", "topic"], shared, "")


def counter_headers() -> list[str]:
    """The counters as table headers."""
    return [name.replace("_", " ") for name in SHOWN_COUNTERS]


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
        [name.replace("_", " ") for name in UNPUBLISHED_COLUMNS],
        [tuple(entry[name] for name in UNPUBLISHED_COLUMNS) for entry in unpublished["newest"]],
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
    sinks: Sequence[dict[str, Any]] = (),
) -> list[TableView]:
    """The consumer (when it recorded anything), its lag, the controller (when asked), the
    consumers of other topics (when any), the dead letters that could not be published
    (when any), the collections, the rows per bucket of the bucketed ones (when any), and
    the sinks (when any)."""
    tables = []
    if recorded:
        rate = consumer["processed_rows_per_s"]
        lag = consumer["lag_total"]
        row = (
            _state(consumer),
            *(consumer[name] for name in TOTALS),
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
        line = "consumer: nothing recorded yet (is `collection-manager consumer run` running?)"
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
    shared = shared_partitions_table(infos)
    if shared is not None:
        tables.append(shared)
    if sinks:
        tables.append(sinks_table(sinks))
    return tables


def sinks_table(sinks: Sequence[dict[str, Any]]) -> TableView:
    """A line per sink: its process' state, how far it published and how far behind."""
    return TableView(
        plural(len(sinks), "sink"),
        ["sink", "collection", "topic", "state", "position", "behind"],
        [
            (s["name"], s["collection"], s["topic"], s["state"], s["position"], s["behind"])
            for s in sinks
        ],
        "",
        null="-",
    )


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
    """The help's example of a collection of four buckets by ``replica_id`` on a topic of 16
    partitions, its two rows in bucket 1 (the times those of ``collections query``'s
    example cut)."""
    name = "frontiers_by_replica"
    spec = dataclasses.replace(
        introspection_spec("compute_frontiers"),
        name=name,
        buckets=4,
        partitioning=assign(name, 4, 16, "cm.requests"),
    )
    times = (12, 40, 7, 9)
    buckets = tuple(BucketRows(b, 2 if b == 1 else 0, t) for b, t in enumerate(times))
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
    parser.add_argument(
        "--wait",
        action="store_true",
        help="first wait until the pipeline is ready: the consumer applies, every active "
        "replica's heartbeat was applied, and what was published until then is applied "
        "(for scripts that start the pipeline in the background, then read)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds_argument,
        default=WAIT_TIMEOUT_S,
        metavar="SECONDS",
        help=f"how long --wait waits before it fails, naming what it waited for "
        f"(default {WAIT_TIMEOUT_S:g})",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Prints the consumer's progress and lag, the dead letters it could not publish, and
    each collection's counters. Needs only Redis: with Kafka down the lag is unknown."""
    infra = from_env(InfraConfig)
    endpoints = devservices.running(infra, needs=("redis",))
    topic = args.topic or from_env(ConsumerConfig).topic
    namespace = from_env(ReplicaConfig).replica_namespace
    client = connected_client(endpoints.redis_url)
    try:
        if args.wait:
            wait_until_ready(
                client,
                endpoints.kafka_bootstrap,
                topic,
                namespace,
                args.timeout,
                lambda reason: print(f"waiting for {reason}", file=sys.stderr, flush=True),
            )
        report = read_status(
            client, endpoints.kafka_bootstrap, topic, namespace, infra.services_file
        )
    finally:
        client.close()
    show(
        args.format,
        report.json(),
        *status_tables(
            report.consumer,
            report.infos,
            bool(report.raw),
            report.unpublished,
            report.others,
            report.controller,
            report.sinks,
        ),
        headers=not args.no_headers,
    )
    return 0
