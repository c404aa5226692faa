"""Errors of the control area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError, utc
from collection_manager.storage.client import REDIS_FAULTS

# What a lease check or a removal survives: it is logged and retried at the next check.
CONTROLLER_FAULTS: tuple[type[Exception], ...] = (CollectionManagerError, *REDIS_FAULTS)


class ControllerError(CollectionManagerError):
    """The controller could not publish a membership change."""


class NotAMemberError(CollectionManagerError):
    """A replica to remove is no member (never added, or removed already)."""

    def __init__(self, replica_id: str) -> None:
        super().__init__(
            f"replica {replica_id} is not a member; `collection-manager replicas list` lists them"
        )
        self.replica_id = replica_id


class ReplicaRunningError(CollectionManagerError):
    """A replica to add is a live member (active, its lease not ended): an agent may still
    run under its epoch, and adding would fence it. Refused unless replacing on purpose.

    Attributes:
        replica_id: the replica.
        epoch: the live incarnation.
    """

    def __init__(
        self,
        replica_id: str,
        epoch: int,
        last_heartbeat_at: int | None,
        lease_expires_at: int | None,
        replace: str = "--replace",
    ) -> None:
        beat = (
            "no heartbeat yet"
            if last_heartbeat_at is None
            else f"last heartbeat {utc(last_heartbeat_at)}"
        )
        lease = (
            "" if lease_expires_at is None else f", lease until {utc(lease_expires_at)} of log time"
        )
        super().__init__(
            f"replica {replica_id} already runs at epoch {epoch} ({beat}{lease}); stop its "
            f"agent first, or pass {replace} to fence epoch {epoch} and run this one instead"
        )
        self.replica_id, self.epoch = replica_id, epoch
