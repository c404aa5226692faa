"""The demo's options: how big it is, how long it runs, and the short intervals it runs with."""

from __future__ import annotations

import dataclasses

from collection_manager.config import ReplicaConfig, from_env


@dataclasses.dataclass(frozen=True)
class DemoOptions:
    """How big and how long.

    Attributes:
        duration_s: about how long the replicas publish changes (at least 10 s).
        scale: rows per replica grow with it: ``8 * scale`` dataflows on 4 workers each.
        replicas: replica agents, at least 3 (one is removed, one killed).
        timeout_s: how long any one wait may take (consumer start, catching up, ...).
        step_interval_ms: time between two changes of an agent.
        heartbeat_interval_ms: time between two heartbeats of an agent.
        lease_ttl_ms: a replica without a heartbeat for this long is removed. A lease is
            renewed only once the consumer applied a heartbeat, so it must outlast the
            slowest micro-batch on a busy machine (seconds), yet let the killed replica go
            well within the demo.
        row_ttl_ms: TTL of the agents' error and hydration rows (``CM_ROW_TTL_MS``):
            shorter than the lease, so the killed replica's rows go first one by one.
    """

    duration_s: float = 30.0
    scale: int = 1
    replicas: int = 3
    timeout_s: float = 120.0
    step_interval_ms: int = 500
    heartbeat_interval_ms: int = 500
    lease_ttl_ms: int = 8_000
    row_ttl_ms: int = 3_000

    def replica_config(self) -> ReplicaConfig:
        """The ``CM_*`` replica settings with the demo's short intervals and lease."""
        return dataclasses.replace(
            from_env(ReplicaConfig),
            replica_ttl_ms=self.lease_ttl_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            lease_check_interval_ms=min(250, self.lease_ttl_ms // 4),
            step_interval_ms=self.step_interval_ms,
            row_ttl_ms=self.row_ttl_ms,
        )
