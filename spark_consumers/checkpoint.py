"""Spark's checkpoint of the streaming query, read and cleared through Hadoop's FileSystem.

Through the driver's JVM, so a checkpoint on ``hdfs://`` or ``s3a://`` is read the same way
as a local one. Only what the consumer needs: where Spark would read next, and clearing
Spark's own entries (never anything else in the directory).
"""

from __future__ import annotations

from typing import Any

from spark_consumers.positions import parse_offset_log

# What Spark writes into a checkpoint location of a query without state.
SPARK_ENTRIES = ("offsets", "commits", "sources", "metadata", "state")


class SparkCheckpoint:
    """The checkpoint at ``location`` (a path or URI), as the driver's Hadoop sees it."""

    def __init__(self, spark: Any, location: str) -> None:
        jvm = spark._jvm
        self._path = jvm.org.apache.hadoop.fs.Path
        self._io = jvm.org.apache.commons.io.IOUtils
        self._root = self._path(location)
        self._fs = self._root.getFileSystem(spark._jsc.hadoopConfiguration())
        self.location = location

    def next_offsets(self, topic: str) -> dict[int, int] | None:
        """Where Spark would read ``topic`` next, or None when it cannot be trusted to say.

        Spark resumes after its last committed batch: the end offsets of that batch. With
        no committed batch (or none of this topic) it would read from the starting offsets
        it stored when the checkpoint was made, which may be ahead of Redis: None then.
        """
        committed = self._batches("commits")
        if not committed:
            return None
        return parse_offset_log(self._read(f"offsets/{max(committed)}"), topic)

    def clear(self) -> bool:
        """Deletes Spark's entries; whether there were any. The next query starts afresh."""
        found = False
        for name in SPARK_ENTRIES:
            path = self._path(self._root, name)
            if self._fs.exists(path):
                self._fs.delete(path, True)
                found = True
        return found

    def _batches(self, name: str) -> list[int]:
        path = self._path(self._root, name)
        if not self._fs.exists(path):
            return []
        names = [str(status.getPath().getName()) for status in self._fs.listStatus(path)]
        return [int(n) for n in names if n.isdigit()]

    def _read(self, name: str) -> str:
        stream = self._fs.open(self._path(self._root, name))
        try:
            return str(self._io.toString(stream, "UTF-8"))
        finally:
            stream.close()
