"""The controller's Prometheus metrics (served by ``controller run``, see
``collection_manager/observability``). Updated where the controller acts, never by
reading Redis at scrape time."""

from __future__ import annotations

from prometheus_client import Counter, Gauge

from collection_manager.control.members import ACTIVE, REMOVED, REMOVING

REPLICAS = Gauge(
    "cm_controller_replicas",
    "Replicas the controller knows, by state, as of its last lease check (removed ones are "
    "kept for the retention, CM_REPLICA_RETENTION_MS).",
    ["state"],
)
CHECKS = Counter("cm_controller_lease_checks", "Lease checks done (each ends with a tick).")
CHECK_FAILURES = Counter(
    "cm_controller_lease_check_failures", "Lease checks that failed (Kafka or Redis away)."
)
LAST_CHECK = Gauge(
    "cm_controller_last_check_timestamp_seconds", "When the last lease check ended (Unix time)."
)
EXPIRIES = Counter("cm_controller_lease_expiries", "Replicas removed because their lease expired.")
REMOVALS = Counter(
    "cm_controller_removals",
    "Replicas removed, for any reason: their rows retracted and their epoch fenced.",
)
TICKS_LOST = Counter(
    "cm_controller_ticks_unacknowledged",
    "Ticks the broker did not acknowledge in time (log time stood still until the next).",
)
COLLECTED = Counter(
    "cm_controller_replicas_collected",
    "Removed replicas whose control state was deleted after the retention.",
)

STATES = (ACTIVE, REMOVING, REMOVED)
for _state in STATES:
    REPLICAS.labels(_state)
