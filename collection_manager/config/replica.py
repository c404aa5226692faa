"""The settings of the replica agents and the controller: heartbeats, leases, steps, the
rows' TTL and the retention of removed replicas (docs/concepts/leases-and-retention.md).
"""

from __future__ import annotations

import dataclasses

from collection_manager.config.settings import setting


@dataclasses.dataclass(frozen=True)
class ReplicaConfig:
    """Agents and the controller: heartbeats, leases (docs/concepts/leases-and-retention.md)."""

    replica_ttl_ms: int = setting(
        10_000,
        "A replica without a heartbeat for this long of log time (the controller's ticks "
        "the consumer applied) is removed (its lease expired).",
    )
    heartbeat_interval_ms: int = setting(1_000, "How often an agent sends a heartbeat.")
    lease_check_interval_ms: int = setting(
        500, "How often the controller checks the leases and ticks every partition."
    )
    step_interval_ms: int = setting(1_000, "How often an agent's subscribes publish changes.")
    controller_metrics_address: str = setting(
        "",
        "host:port where `controller run` serves /metrics, /healthz and /readyz (port 0: any "
        "free one); empty: no listener.",
    )
    agent_metrics_address: str = setting(
        "",
        "host:port where `replicas run` serves /metrics, /healthz and /readyz (port 0: any free "
        "one, printed at start: give each agent on a host its own); empty: no listener.",
    )
    row_ttl_ms: int = setting(
        6_000,
        "TTL of the rows agents publish to collections whose rows expire (error_counts, "
        "hydration_status, scrape_status), refreshed at every step: the rows of a replica "
        "silent this long expire one by one, before its lease. 0: no TTL (the openmetrics "
        "source refuses it); else at least 4 step intervals.",
    )
    publish_batch_rows: int = setting(1_000, "At most this many updates per Append request.")
    collection_suffix: str = setting(
        "", "Appended to the introspection collections' names (tests use their own copies)."
    )
    replica_retention_ms: int = setting(
        7 * 24 * 3600 * 1000,
        "A removed replica's control state (its issued epochs, member record, sighting and "
        "fences) is deleted this long after its removal (wall clock); its late requests are "
        "dead letters from then on. Default 7 days, at least 1 ms.",
    )
    replica_namespace: str = setting(
        "cm:replicas",
        "Prefix of every replica key in Redis (issued epochs, members, leases, sightings, "
        "log times); give the consumer the controller's. The consumer refuses epochs never "
        "issued there.",
    )
