"""A sink's Prometheus metrics (served by ``sinks run``). One process runs one sink, so the
``sink`` label has one value a process; updated where the sink acts."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from collection_manager.observability.endpoint import process_registry

REGISTRY = process_registry()  # what the sink's /metrics shows

CHANGES = Counter(
    "cm_sink_changes_published",
    "Changes published to the sink's topic in committed transactions (a snapshot's rows "
    "among them).",
    ["sink"],
    registry=REGISTRY,
)
TRANSACTIONS = Counter(
    "cm_sink_transactions",
    "Kafka transactions the sink committed (each holds a step's changes and its position).",
    ["sink"],
    registry=REGISTRY,
)
ABORTS = Counter(
    "cm_sink_aborts",
    "Transactions aborted (Kafka or Redis failed during one; it is published again).",
    ["sink"],
    registry=REGISTRY,
)
BEHIND = Gauge(
    "cm_sink_behind_times",
    "How far the sink's position trails its collection's readable time, in the "
    "collection's times (of a bucketed one, summed over its buckets); 0: caught up.",
    ["sink"],
    registry=REGISTRY,
)
LAST_COMMIT = Gauge(
    "cm_sink_last_commit_timestamp_seconds",
    "When the sink last committed a transaction (Unix time).",
    ["sink"],
    registry=REGISTRY,
)
OUTAGE = Gauge(
    "cm_sink_outage",
    "1 while Kafka or Redis is away and the sink waits for it, else 0.",
    ["sink"],
    registry=REGISTRY,
)
