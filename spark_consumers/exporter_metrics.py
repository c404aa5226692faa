"""The consumer's Prometheus metric families, on the registry its exporter serves.

Defined apart from what sets them (``exporter.py``'s ``ConsumerObservability``) so that the
metric reference (``docs/reference/metrics.md``) reads them from one module: each family,
in this order, is a row of its consumer table.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from collection_manager.observability.endpoint import process_registry
from collection_manager.storage.counters import APPLY_COUNTERS, MEANINGS

# What metric names the applier's counters get; the others are named as they are.
_NAMES = {"requests": "requests_applied", "updates": "updates_applied"}

REGISTRY = process_registry()  # what the consumer's /metrics shows

BATCHES = Counter("cm_consumer_batches", "Micro-batches applied.", ["topic"], registry=REGISTRY)
BATCH_SECONDS = Histogram(
    "cm_consumer_batch_duration_seconds",
    "Time of a micro-batch on the driver: reading, applying on the executors, recording.",
    ["topic"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
    registry=REGISTRY,
)
BATCH_STEP_SECONDS = Histogram(
    "cm_consumer_batch_step_seconds",
    "Time of each step of a micro-batch: on the driver check, collect (the executors' "
    "work), replicas, progress, record; on the executors, summed over tasks, decode, "
    "epochs, dead_letters, apply, sightings.",
    ["topic", "step"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10),
    registry=REGISTRY,
)
APPLIED = {
    counter: Counter(
        f"cm_consumer_{_NAMES.get(counter, counter)}",
        MEANINGS[counter],
        ["topic", "collection"],
        registry=REGISTRY,
    )
    for counter in APPLY_COUNTERS
}
PUBLISH_TO_VISIBLE = Histogram(
    "cm_consumer_publish_to_visible_seconds",
    "Per batch, the oldest request's time from its Kafka timestamp (when its producer made "
    "it) to the end of the batch that applied it: the worst staleness a reader saw.",
    ["topic"],
    buckets=(0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2.5, 5, 10, 30, 60, 300),
    registry=REGISTRY,
)
DEAD_LETTERS = Counter(
    "cm_consumer_dead_letters",
    "Requests that became dead letters (undecodable, invalid, unissued, too large, refused).",
    ["topic"],
    registry=REGISTRY,
)
DEAD_LETTER_KINDS = Counter(
    "cm_consumer_dead_letters_by_kind",
    "Dead letters by error kind (its class name); a kind's series starts at its first.",
    ["topic", "kind"],
    registry=REGISTRY,
)
CONTROL = Counter(
    "cm_consumer_control_requests", "Control requests applied.", ["topic"], registry=REGISTRY
)
TIMER_RETRACTIONS = Counter(
    "cm_consumer_timer_retractions",
    "Rows the retraction timer retracted: their valid_until or their TTL passed.",
    ["topic"],
    registry=REGISTRY,
)
CUT_SETTLES = Counter(
    "cm_consumer_cut_settles",
    "Settled cuts recorded for bucketed collections (docs/concepts/buckets.md).",
    ["topic"],
    registry=REGISTRY,
)
CUT_PARTS_TRIMMED = Counter(
    "cm_consumer_cut_parts_trimmed",
    "Parts of requests sent to several buckets trimmed once a settled cut passed them.",
    ["topic"],
    registry=REGISTRY,
)
CUT_GROUPS_GIVEN_UP = Counter(
    "cm_consumer_cut_groups_given_up",
    "Requests sent to several buckets given up incomplete: a part never came within the "
    "delivery timeout, and readers see the parts that did (docs/concepts/buckets.md).",
    ["topic"],
    registry=REGISTRY,
)
CUT_TRAIL = Gauge(
    "cm_consumer_cut_trail_seconds",
    "Per bucketed collection (its name, not a bucket's), at its last settle: the age of the "
    "oldest change its consistent cut holds back from readers, by the consumer's clock; 0 "
    "when the cut is at every bucket's latest time. It grows while a request sent to "
    "several buckets waits for a part (docs/concepts/buckets.md). A collection's series "
    "goes when a round of settles does not settle it (dropped, or Redis away).",
    ["topic", "collection"],
    registry=REGISTRY,
)
LAST_BATCH = Gauge(
    "cm_consumer_last_batch_timestamp_seconds",
    "When the last batch ended (Unix time).",
    ["topic"],
    registry=REGISTRY,
)
LAG = Gauge(
    "cm_consumer_lag_records",
    "Records Kafka holds beyond what the consumer read, per partition, as last asked.",
    ["topic", "partition"],
    registry=REGISTRY,
)
LAG_PROBE_FAILURES = Counter(
    "cm_consumer_lag_probe_failures",
    "Lag probes that Kafka did not answer in time.",
    ["topic"],
    registry=REGISTRY,
)
OUTAGE = Gauge(
    "cm_consumer_outage",
    "1 while the consumer waits out an outage of Redis, Kafka or its query, else 0.",
    ["topic"],
    registry=REGISTRY,
)
OUTAGE_RETRIES = Counter(
    "cm_consumer_outage_retries",
    "Attempts that failed during outages.",
    ["topic"],
    registry=REGISTRY,
)
GROUP_COMMIT_FAILURES = Counter(
    "cm_consumer_group_commit_failures",
    "Commits of applied offsets to CM_COMMIT_GROUP that Kafka did not take (retried with "
    "the next batch's offsets).",
    ["topic"],
    registry=REGISTRY,
)
CLAIM_TAKEOVERS = Counter(
    "cm_consumer_claim_takeovers",
    "Starts that took over the topic's claim from a consumer that no longer ran on this "
    "host (killed), before its record expired (storage/claims.py).",
    ["topic"],
    registry=REGISTRY,
)
REPLICA_REFUSALS = Counter(
    "cm_consumer_replica_refusals",
    "Batches whose progress was not recorded because fewer replicas than "
    "CM_REDIS_REPLICA_ACKS confirmed their writes in time (retried as an outage).",
    ["topic"],
    registry=REGISTRY,
)
UNPUBLISHED = Gauge(
    "cm_consumer_dead_letters_unpublished",
    "Dead letters that could not be published to the dead-letter topic, recorded in Redis "
    "instead (all consumers of this Redis; `status` lists the newest).",
    registry=REGISTRY,
)
REWINDS = Gauge(
    "cm_consumer_rewinds",
    "Starts that read again from Redis's progress (it held less than the checkpoint), as "
    "recorded in Redis for this topic; `status` shows the last.",
    ["topic"],
    registry=REGISTRY,
)
TOPIC_RECREATIONS = Gauge(
    "cm_consumer_topic_recreations",
    "Times the request topic was found deleted and created again, as recorded in Redis.",
    ["topic"],
    registry=REGISTRY,
)
DELETES_IN_PROGRESS = Gauge(
    "cm_consumer_deletes_in_progress",
    "Collections with a large delete in progress (in bounded steps; docs/concepts/deletes.md).",
    registry=REGISTRY,
)
UP = Gauge(
    "cm_consumer_query_running",
    "1 while the streaming query runs, else 0.",
    ["topic"],
    registry=REGISTRY,
)
