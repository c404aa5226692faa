"""The change log as a stream: ``(time, columns..., diff)``, offsets in collection time.

An offset is ``{"time": t}``: every change at a time up to ``t`` has been delivered. A
micro-batch reads the changes in ``(start, end]``, where ``end`` is the latest readable time
(the log is whole up to it), in bounded steps. Spark keeps the offsets in the query's
checkpoint, so a restarted query reads the batch it had not finished again, the same
changes, and goes on from there: each change is delivered once per query. The log keeps
only its newest changes (``CM_LOG_MAX_LENGTH``); a query whose checkpoint is older than what
the log still holds fails and says how to start again from a snapshot.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

import redis
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.specs import CollectionSpec
from collection_manager.sql.options import Connection, OptionError, option
from collection_manager.sql.schema import spark_schema
from collection_manager.sql.snapshots import SnapshotSource
from collection_manager.storage.client import REDIS_FAULTS
from collection_manager.storage.step_reads import ChangeLog, readable_time

BEFORE, AFTER = ("time",), ("diff",)


class LogTrimmedError(CollectionManagerError):
    """The change log no longer holds changes a stream has still to deliver."""


@dataclasses.dataclass(frozen=True)
class ChangesPart(InputPartition):
    """The changes at times in ``(after, through]``."""

    after: int
    through: int


class ChangesSource(DataSource):
    """``spark.readStream.format("collection_changes").load("<collection>")``."""

    @classmethod
    def name(cls) -> str:
        return "collection_changes"

    def schema(self) -> StructType:
        return spark_schema(Connection.of(self.options).spec(), BEFORE, AFTER)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        connection = Connection.of(self.options)
        return ChangesReader(connection, connection.spec(), self.options)


def starting_after(options: Mapping[str, str], readable: int) -> int:
    """The initial offset's time from ``startingTime``: ``latest`` (the default: changes
    from now on), ``earliest`` (all the log holds) or a time ``t`` (changes at ``t`` on)."""
    raw = option(options, "startingTime") or "latest"
    if raw == "latest":
        return readable
    if raw == "earliest":
        return 0
    try:
        value = int(raw)
    except ValueError:
        value = 0
    if value < 1:
        raise OptionError(
            f"option startingTime must be latest, earliest or a time of 1 or more, not {raw!r}"
        )
    return value - 1


class ChangesReader(DataSourceStreamReader):
    """Offsets from the collection's readable time; a partition per micro-batch."""

    def __init__(
        self, connection: Connection, spec: CollectionSpec, options: Mapping[str, str]
    ) -> None:
        self._connection = connection
        self._spec = spec
        self._options = dict(options)
        self._client: redis.Redis | None = None

    def _readable(self) -> int:
        if self._client is None:
            self._client = self._connection.client()
        try:
            return readable_time(self._client, self._spec.name)
        except REDIS_FAULTS as exc:
            raise self._connection.unreachable(exc) from None

    def initialOffset(self) -> dict[str, int]:
        return {"time": starting_after(self._options, self._readable())}

    def latestOffset(self, start: dict[str, int], limit: object) -> dict[str, int]:
        readable = self._readable()
        if readable < start["time"]:
            raise LogTrimmedError(
                f"{self._spec.name} is at time {readable}, before this query's offset "
                f"{start['time']}: it was dropped and made again, or Redis lost writes. "
                "Start a new query with a new checkpoint",
                collection=self._spec.name,
            )
        return {"time": readable}

    def partitions(self, start: dict[str, int], end: dict[str, int]) -> Sequence[InputPartition]:
        if end["time"] <= start["time"]:
            return []
        return [ChangesPart(start["time"], end["time"])]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, ChangesPart)
        connection = self._connection
        client = connection.client()
        try:
            log = ChangeLog(client, self._spec.name)
            self._check_held(log, partition.after)
            changes = list(log.changes(partition.after, partition.through))
            self._check_held(log, partition.after)  # not trimmed while it was read either
        except REDIS_FAULTS as exc:
            raise connection.unreachable(exc) from None
        finally:
            client.close()
        for change in changes:
            yield (change.time, *change.row, change.diff)

    def _check_held(self, log: ChangeLog, after: int) -> None:
        trimmed = log.trimmed_through()
        if trimmed > after:
            name = self._spec.name
            raise LogTrimmedError(
                f"the change log of {name} no longer holds the changes after time {after} "
                f"that this query has still to read (it was trimmed through time {trimmed}). "
                f'Start again from a snapshot: spark.read.format("{SnapshotSource.name()}")'
                f'.load("{name}") gives the rows and their time (as_of); then start a new '
                "query, with a new checkpoint, with option startingTime = that time + 1",
                collection=name,
            )

    def commit(self, end: dict[str, int]) -> None:
        """Nothing to do: the log is read, never consumed."""

    def stop(self) -> None:
        if self._client is not None:
            self._client.close()
