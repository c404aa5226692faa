"""Errors of the configuration area."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ConfigError(CollectionManagerError):
    """A ``CM_*`` setting or a command-line option that has no valid value."""


class UsageError(ConfigError):
    """Options that are no valid use of a command, found after argparse (exit code 2)."""
