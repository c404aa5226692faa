"""How ``status`` shows what it read, as tables: the consumer (its progress, last rewind
and lag per partition), the controller, the consumers of other topics, the dead letters
that could not be published, the collections, their rows per bucket and the sinks. Pure:
values in, views out; ``cli/status.py`` reads and prints (``--format json`` is
``reading/status.py``'s ``status_json``).
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from typing import Any

from collection_manager.cli.output import CREATE_HINT, TableView, plural
from collection_manager.cli.partitions import bucket_partition
from collection_manager.reading.catalog import CollectionInfo
from collection_manager.reading.status import TOTALS, UNPUBLISHED_COLUMNS
from collection_manager.storage.counters import SHOWN_COUNTERS


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
    tables = _consumer_tables(consumer, recorded)
    if controller is not None:
        tables.append(controller_table(controller))
    if other_topics:
        title = "consumers of other topics in this Redis (status --topic T)"
        tables.append(TableView(title, ["topic"], [(t,) for t in other_topics], ""))
    if unpublished is not None and unpublished["count"] > 0:
        tables.append(unpublished_table(unpublished))
    tables.append(_collections_table(infos))
    if any(i.buckets for i in infos):
        tables.append(bucket_table(infos))
    shared = shared_partitions_table(infos)
    if shared is not None:
        tables.append(shared)
    if sinks:
        tables.append(sinks_table(sinks))
    return tables


def _consumer_tables(consumer: dict[str, Any], recorded: bool) -> list[TableView]:
    """The consumer's progress, its last rewind (when any) and its lag per partition (when
    the consumer reports one); a line when it recorded nothing."""
    if not recorded:
        line = "consumer: nothing recorded yet (is `collection-manager consumer run` running?)"
        return [TableView("consumer", [], [], line)]
    tables = [_consumer_table(consumer)]
    if consumer["last_rewind"]:
        tables.append(_rewind_table(consumer))
    if consumer["lag"] is not None:
        tables.append(
            TableView(
                "Kafka lag per partition",
                ["topic", "partition", "lag"],
                [(e["topic"], e["partition"], e["lag"]) for e in consumer["lag"]],
                "lag per partition: not reported yet (the consumer reports it after a batch)",
            )
        )
    return tables


def _consumer_table(consumer: dict[str, Any]) -> TableView:
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
    return TableView(title, columns, [row], "", null="-")


def _rewind_table(consumer: dict[str, Any]) -> TableView:
    last = consumer["last_rewind"]
    return TableView(
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


def _collections_table(infos: Sequence[CollectionInfo]) -> TableView:
    return TableView(
        plural(len(infos), "collection"),
        ["collection", "rows", "time", *counter_headers()],
        [(i.spec.name, i.rows, i.time, *(i.counters[c] for c in SHOWN_COUNTERS)) for i in infos],
        f"no collections yet; {CREATE_HINT}",
    )


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
