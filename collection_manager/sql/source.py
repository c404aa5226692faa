"""Registering the data sources with a Spark session."""

from __future__ import annotations

from typing import Any

from collection_manager.sql.changes import ChangesSource
from collection_manager.sql.snapshots import SnapshotSource

SNAPSHOT_FORMAT = SnapshotSource.name()
CHANGES_FORMAT = ChangesSource.name()
# Spark refuses a reader with pushFilters unless this is on (it is off by default).
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Makes ``collections`` (batch) and ``collection_changes`` (streaming) known to
    ``spark`` and turns on the filter pushdown of Python data sources."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    spark.dataSource.register(SnapshotSource)
    spark.dataSource.register(ChangesSource)
