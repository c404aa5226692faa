"""Collections in Spark SQL: a batch data source of consistent snapshots and a streaming
source of the change log (docs/howto/spark-cluster.md, "Spark SQL data sources").
``register(spark)`` makes both known to a session."""

from collection_manager.config import roles

# One line naming the extra, not pyspark's ModuleNotFoundError from deep inside.
roles.require("collection_manager.sql", "sql")

from collection_manager.sql.source import CHANGES_FORMAT, SNAPSHOT_FORMAT, register  # noqa: E402

__all__ = ["CHANGES_FORMAT", "SNAPSHOT_FORMAT", "register"]
