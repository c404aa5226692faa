"""Errors of the control area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ControllerError(CollectionManagerError):
    """The controller could not publish a membership change."""
