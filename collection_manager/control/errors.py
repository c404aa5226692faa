"""Errors of the control area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ControllerError(CollectionManagerError):
    """The controller could not publish a membership change."""


class NotAMemberError(CollectionManagerError):
    """A replica to remove is no member (never added, or removed already)."""

    def __init__(self, replica_id: str) -> None:
        super().__init__(
            f"replica {replica_id} is not a member; `collection-manager replicas list` lists them"
        )
        self.replica_id = replica_id
