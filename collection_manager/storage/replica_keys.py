"""Redis key layout of everything about replicas (members, leases, epochs, sightings),
under one namespace: the control state, apart from the collections' keys (``keys.py``)."""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class ReplicaKeys:
    """The keys of everything about replicas, under one namespace (``CM_REPLICA_NAMESPACE``).

    Defined once here for the controller (``control/members.py``, which writes epochs,
    members and leases) and the consumer (``storage/epochs.py``, ``storage/replicas.py``,
    which read epochs and write sightings and log times). Two deployments with different
    namespaces share no replica key, so equal replica ids never meet
    (docs/concepts/leases-and-retention.md).
    """

    namespace: str = "cm:replicas"

    def epoch(self, replica_id: str) -> str:
        """String: ``replica_id``'s epoch counter as versions before ``issued`` kept it
        (read as its highest issued epoch until the controller issues it a new one)."""
        return f"{self.namespace}:epoch:{replica_id}"

    @property
    def members(self) -> str:
        """Hash: replica id -> JSON member record."""
        return f"{self.namespace}:members"

    @property
    def leases(self) -> str:
        """Hash: replica id -> JSON lease, for display."""
        return f"{self.namespace}:leases"

    @property
    def collections(self) -> str:
        """Set: the collections agents declared for their sources' rows (removals retract
        a replica's rows from these too)."""
        return f"{self.namespace}:collections"

    @property
    def _tagged(self) -> str:
        # Sightings and log times are written and read together (one script, one
        # transaction), so on a Redis Cluster they must share a slot: the namespace is
        # their hash tag.
        return f"{{{self.namespace}}}"

    @property
    def seen(self) -> str:
        """Hash: replica id -> JSON sighting (the latest control request applied)."""
        return f"{self._tagged}:seen"

    @property
    def log_times(self) -> str:
        """Hash: ``topic:partition`` -> the log time, the newest tick applied there (ms)."""
        return f"{self._tagged}:log-time"

    @property
    def issued(self) -> str:
        """Hash: replica id -> JSON ``{"highest": h, "floor": f}``: the epochs it may
        claim (``core/epochs.py``), written before its ``ReplicaAdded`` is published."""
        return f"{self._tagged}:issued"

    @property
    def collected(self) -> str:
        """String: the highest epoch of any incarnation collected after the retention."""
        return f"{self._tagged}:collected"

    def untagged(self) -> dict[str, str]:
        """The names ``seen`` and ``log_times`` had before their hash tag -> their names."""
        return {f"{self.namespace}:seen": self.seen, f"{self.namespace}:log-time": self.log_times}
