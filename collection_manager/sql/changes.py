"""The change log as a stream: ``(time, columns..., diff)``, offsets in collection time.

An offset is ``{"time": t}``: every change at a time up to ``t`` has been delivered. A
micro-batch reads the changes in ``(start, end]``, where ``end`` is the latest readable time
(the log is whole up to it), in bounded steps. Spark keeps the offsets in the query's
checkpoint, so a restarted query reads the batch it had not finished again, the same
changes, and goes on from there: each change is delivered once per query. The log keeps
only its newest changes (``CM_LOG_MAX_LENGTH``); a query whose checkpoint is older than what
the log still holds fails with a ``LogTrimmedError`` (``core/errors.py``, raised by the
log's reader, ``storage/change_log.py``) that says how to start again from a snapshot.

A bucketed collection's (``core/buckets.py``) offsets are consistent cuts of its buckets
(``core/cut.py``), ``{"cut": [t0, t1, ...]}``, a time per bucket, and its rows are
``(bucket, time, columns..., diff)``, ``time`` the bucket's own. A micro-batch reads each
bucket's changes between its times in two consistent cuts, one partition per bucket that
has any, so it holds every request sent to several buckets whole or not at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

import redis
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.types import StructType

from collection_manager.core.cut import Cut, CutError
from collection_manager.core.errors import LogTrimmedError
from collection_manager.core.specs import CollectionSpec
from collection_manager.core.stepped_read import Change
from collection_manager.sql.options import Connection, KeptClient, OptionError, option
from collection_manager.sql.schema import spark_schema
from collection_manager.sql.snapshots import SnapshotSource
from collection_manager.storage.change_log import ChangeLog
from collection_manager.storage.cut import read_cut
from collection_manager.storage.rows import Row
from collection_manager.storage.step_reads import readable_time

BEFORE, AFTER = ("time",), ("diff",)
CUT_BEFORE = ("bucket", "time")


@dataclasses.dataclass(frozen=True)
class ChangesPart(InputPartition):
    """The changes at times in ``(after, through]`` (of ``bucket``, for a bucketed one)."""

    after: int
    through: int
    bucket: int | None = None


class ChangesSource(DataSource):
    """``spark.readStream.format("collection_changes").load("<collection>")``."""

    @classmethod
    def name(cls) -> str:
        return "collection_changes"

    def schema(self) -> StructType:
        spec = Connection.of(self.options).spec()
        return spark_schema(spec, CUT_BEFORE if spec.buckets > 1 else BEFORE, AFTER)

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


def starting_cut(options: Mapping[str, str], now: Cut) -> Cut:
    """A bucketed collection's initial offset from ``startingTime``: ``latest`` (the cut
    ``now``), ``earliest`` (all the logs hold) or a cut as a snapshot's ``as_of`` prints it
    (``12,40,7``: the changes after it)."""
    raw = option(options, "startingTime") or "latest"
    buckets = len(now.times)
    if raw == "latest":
        return now
    if raw == "earliest":
        return Cut((0,) * buckets)
    try:
        return Cut.parse(raw, buckets)
    except CutError:
        raise OptionError(
            f"option startingTime of a collection of {buckets} buckets must be latest, "
            f"earliest or a cut: {buckets} times joined by commas, as a snapshot's as_of "
            f"gives it (the changes after it), not {raw!r}"
        ) from None


class ChangesReader(DataSourceStreamReader):
    """Offsets from the collection's readable time (a bucketed one's consistent cut); a
    partition per micro-batch (per bucket with changes)."""

    def __init__(
        self, connection: Connection, spec: CollectionSpec, options: Mapping[str, str]
    ) -> None:
        self._connection = connection
        self._spec = spec
        self._options = dict(options)
        self._driver = KeptClient(connection)

    def _readable(self) -> int:
        return self._driver.read(lambda client: readable_time(client, self._spec.name))

    def _cut(self, readable: bool = True) -> Cut:
        """The consistent cut now: by default of readable times (a delete still in progress
        writes its changes with its last step), else of those readers see."""
        return self._driver.read(lambda client: read_cut(client, self._spec, readable))

    def initialOffset(self) -> dict[str, object]:
        if self._spec.buckets > 1:
            return {"cut": list(starting_cut(self._options, self._cut()).times)}
        return {"time": starting_after(self._options, self._readable())}

    def latestOffset(self, start: dict[str, object], limit: object) -> dict[str, object]:
        if self._spec.buckets > 1:
            return {"cut": self._latest_cut(start)}
        readable, after = self._readable(), self._offset_time(start)
        if readable < after:
            raise LogTrimmedError(
                f"{self._spec.name} is at time {readable}, before this query's offset "
                f"{after}: it was dropped and made again, or Redis lost writes. "
                "Start a new query with a new checkpoint",
                collection=self._spec.name,
            )
        return {"time": readable}

    def _latest_cut(self, start: dict[str, object]) -> list[int]:
        after, now = self._offset_cut(start), self._cut().times
        if all(t >= a for t, a in zip(now, after, strict=True)):
            return list(now)
        # A bucket's readable time behind the offset: a delete in progress there, whose time
        # a snapshot's as_of (the query's startingTime) holds, waits; the cut readers see
        # behind it too: not the collection the offset was taken of.
        seen = self._cut(readable=False).times
        if any(t < a for t, a in zip(seen, after, strict=True)):
            raise LogTrimmedError(
                f"{self._spec.name} is at cut {Cut(seen).text()}, before this query's offset "
                f"{Cut(after).text()} in some bucket: it was dropped and made again, or Redis "
                "lost writes. Start a new query with a new checkpoint",
                collection=self._spec.name,
            )
        return [max(t, a) for t, a in zip(now, after, strict=True)]

    def _offset_time(self, offset: dict[str, object]) -> int:
        time = offset.get("time")
        if not isinstance(time, int):
            raise self._other_offset(offset)
        return time

    def _offset_cut(self, offset: dict[str, object]) -> tuple[int, ...]:
        times = offset.get("cut")
        if not isinstance(times, list) or len(times) != self._spec.buckets:
            raise self._other_offset(offset)
        return tuple(int(t) for t in times)

    def _other_offset(self, offset: dict[str, object]) -> LogTrimmedError:
        spec = self._spec
        shape = f"a cut of {spec.buckets} buckets" if spec.buckets > 1 else "a time"
        return LogTrimmedError(
            f"this query's offset {offset} is no offset of {spec.name}, whose offsets are "
            f"{shape}: it was dropped and made again with other buckets. Start a new query "
            "with a new checkpoint",
            collection=spec.name,
        )

    def partitions(
        self, start: dict[str, object], end: dict[str, object]
    ) -> Sequence[InputPartition]:
        if self._spec.buckets > 1:
            after, through = self._offset_cut(start), self._offset_cut(end)
            return [
                ChangesPart(a, t, bucket)
                for bucket, (a, t) in enumerate(zip(after, through, strict=True))
                if t > a
            ]
        after_time, through_time = self._offset_time(start), self._offset_time(end)
        if through_time <= after_time:
            return []
        return [ChangesPart(after_time, through_time)]

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, ChangesPart)
        bucket = partition.bucket
        unit = self._spec.name if bucket is None else self._spec.unit(bucket).name

        def changes(client: redis.Redis) -> list[Change[Row]]:
            log = ChangeLog(client, unit)
            self._check_held(log, unit, partition.after)
            found = list(log.changes(partition.after, partition.through))
            self._check_held(log, unit, partition.after)  # not trimmed while it was read either
            return found

        for change in self._connection.read(changes):
            if bucket is None:
                yield (change.time, *change.row, change.diff)
            else:
                yield (bucket, change.time, *change.row, change.diff)

    def _check_held(self, log: ChangeLog, unit: str, after: int) -> None:
        try:
            log.check_held(after)
        except LogTrimmedError as exc:
            name = self._spec.name
            start = (
                "that as_of (the changes after that cut)"
                if self._spec.buckets > 1
                else "that time + 1"
            )
            raise LogTrimmedError(
                f"the change log of {unit} no longer holds the changes after time {after} "
                f"that this query has still to read (it was trimmed through time "
                f"{exc.trimmed_through}). "
                f'Start again from a snapshot: spark.read.format("{SnapshotSource.name()}")'
                f'.load("{name}") gives the rows and their time (as_of); then start a new '
                f"query, with a new checkpoint, with option startingTime = {start}",
                collection=name,
                trimmed_through=exc.trimmed_through,
                after=exc.after,
            ) from None

    def commit(self, end: dict[str, object]) -> None:
        """Nothing to do: the log is read, never consumed."""

    def stop(self) -> None:
        self._driver.close()
