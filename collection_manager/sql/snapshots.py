"""Batch reads: a collection's rows and multiplicities at one time.

The driver (``partitions``) picks the time, the one readers see now, and splits the read:
one part per index set of a pushed-down filter, or (option ``partitions``) shares of a scan
by a hash of the row. Each executor reads its part in bounded steps at that time
(``storage/step_reads.py``), so the parts together are one snapshot, the one ``query``
prints for that time.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence

from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.datasource import Filter as SparkFilter
from pyspark.sql.types import StructType

from collection_manager.core.filters import Filter, and_
from collection_manager.core.specs import CollectionSpec
from collection_manager.sql.options import MAX_PARTS, Connection, bounded_int, flag
from collection_manager.sql.pushdown import translate
from collection_manager.sql.schema import spark_schema
from collection_manager.storage.client import REDIS_FAULTS
from collection_manager.storage.step_reads import ReadPart, read_part, split, visible_time

ADDED = ("multiplicity", "as_of")


@dataclasses.dataclass(frozen=True)
class SnapshotPart(InputPartition):
    """One part of a read, and the time every part reads at."""

    part: ReadPart
    as_of: int


class SnapshotSource(DataSource):
    """``spark.read.format("collections").load("<collection>")``."""

    @classmethod
    def name(cls) -> str:
        return "collections"

    def schema(self) -> StructType:
        return spark_schema(Connection.of(self.options).spec(), after=ADDED)

    def reader(self, schema: StructType) -> DataSourceReader:
        connection = Connection.of(self.options)
        return SnapshotReader(connection, connection.spec(), self.options)


class SnapshotReader(DataSourceReader):
    """Pushes down what it can answer exactly, plans the parts, reads one."""

    def __init__(
        self, connection: Connection, spec: CollectionSpec, options: Mapping[str, str]
    ) -> None:
        self._connection = connection
        self._spec = spec
        self._parts = bounded_int(options, "partitions", 1, MAX_PARTS)
        self._pushdown = flag(options, "pushdown", True)
        self._pushed: list[Filter] = []

    def pushFilters(self, filters: list[SparkFilter]) -> Iterator[SparkFilter]:
        for pushed in filters:
            term = translate(pushed, self._spec) if self._pushdown else None
            if term is None:
                yield pushed
            else:
                self._pushed.append(term)

    def partitions(self) -> Sequence[InputPartition]:
        client = self._connection.client()
        try:
            as_of = visible_time(client, self._spec.name)
        except REDIS_FAULTS as exc:
            raise self._connection.unreachable(exc) from None
        finally:
            client.close()
        # A scan in n parts costs Redis n scans (each part looks at every row and keeps its
        # share): one part by default, as Redis's single thread is what a read waits on
        # (bench/sql_read.py: two parts took 1.15x one part's time for 10^6 rows).
        parts = split(self._spec, self._where(), self._parts or 1)
        return [SnapshotPart(part, as_of) for part in parts]

    def _where(self) -> Filter | None:
        if not self._pushed:
            return None
        return self._pushed[0] if len(self._pushed) == 1 else and_(*self._pushed)

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, SnapshotPart)
        connection, spec = self._connection, self._spec
        client = connection.client()
        try:
            rows, _ = read_part(client, spec, partition.part, partition.as_of)
        except REDIS_FAULTS as exc:
            raise connection.unreachable(exc) from None
        finally:
            client.close()
        for row, multiplicity in rows.items():
            yield (*row, multiplicity, partition.as_of)
