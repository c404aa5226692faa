"""The controller's Prometheus metrics (served by ``controller run``, see
``collection_manager/observability``). Updated where the controller acts, never by
reading Redis at scrape time."""

from __future__ import annotations

import math

from prometheus_client import Counter, Gauge

from collection_manager.control.members import ACTIVE, REMOVED, REMOVING
from collection_manager.observability.endpoint import process_registry

REGISTRY = process_registry()  # what the controller's /metrics shows

REPLICAS = Gauge(
    "cm_controller_replicas",
    "Replicas the controller knows, by state, as of its last lease check (removed ones are "
    "kept for the retention, CM_REPLICA_RETENTION_MS).",
    ["state"],
    registry=REGISTRY,
)
CHECKS = Counter(
    "cm_controller_lease_checks",
    "Lease checks done (each ends with a tick).",
    registry=REGISTRY,
)
CHECK_FAILURES = Counter(
    "cm_controller_lease_check_failures",
    "Lease checks that failed (Kafka or Redis away).",
    registry=REGISTRY,
)
LAST_CHECK = Gauge(
    "cm_controller_last_check_timestamp_seconds",
    "When the last lease check ended (Unix time).",
    registry=REGISTRY,
)
EXPIRIES = Counter(
    "cm_controller_lease_expiries",
    "Replicas removed because their lease expired.",
    registry=REGISTRY,
)
REMOVALS = Counter(
    "cm_controller_removals",
    "Replicas removed, for any reason: their rows retracted and their epoch fenced.",
    registry=REGISTRY,
)
TICKS_LOST = Counter(
    "cm_controller_ticks_unacknowledged",
    "Ticks the broker did not acknowledge in time (log time stood still until the next).",
    registry=REGISTRY,
)
LEASE_LEFT_MIN = Gauge(
    "cm_controller_lease_left_min_seconds",
    "The least lease left among the active replicas at the last lease check, in log time "
    "as expiry is judged: a lease's expiry minus its partition's log time (just renewed: "
    "the TTL plus the ticks not applied yet); +Inf when no lease can run out yet (no active "
    "replica, or none whose control requests the consumer applied), NaN before the first "
    "check.",
    registry=REGISTRY,
)
COLLECTED = Counter(
    "cm_controller_replicas_collected",
    "Removed replicas whose control state was deleted after the retention.",
    registry=REGISTRY,
)

STATES = (ACTIVE, REMOVING, REMOVED)
for _state in STATES:
    REPLICAS.labels(_state)
LEASE_LEFT_MIN.set(math.nan)
