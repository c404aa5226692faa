"""Batch reads: a collection's rows and multiplicities at one time.

The driver (``partitions``) picks the time, the one readers see now, and splits the read:
one part per index set of a pushed-down filter, or (option ``partitions``) shares of a scan
by a hash of the row. Each executor reads its part in bounded steps at that time
(``storage/step_reads.py``), so the parts together are one snapshot, the one ``collections query``
prints for that time.

A bucketed collection (``core/buckets.py``) is read at one consistent cut of its buckets
(``core/cut.py``), which the driver reads once (``read_cut``): the read is split per bucket
(only those a pushed-down filter pins), and each bucket's read as above, every part at its
bucket's time in the cut. Its ``as_of`` is then the cut as ``collections query`` prints it, a string
(``12,40,7``), where an unbucketed collection's is a long.

Every Redis call goes through ``Connection.read``: again from the start while Redis fails
over, for up to the ``timeout`` option (``collections query --timeout``'s default).
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
from collection_manager.storage.cut import read_cut
from collection_manager.storage.reads import buckets_to_read
from collection_manager.storage.step_reads import ReadPart, read_part, split, visible_time

ADDED = ("multiplicity", "as_of")
# A bucketed collection's as_of is its cut as text.
CUT_ADDED = frozenset({"as_of"})


@dataclasses.dataclass(frozen=True)
class SnapshotPart(InputPartition):
    """One part of a read, and the time it reads at: the one every part reads at, or a
    bucketed collection's ``bucket``'s time in the ``cut`` every part reads at."""

    part: ReadPart
    as_of: int
    bucket: int | None = None
    cut: str | None = None


class SnapshotSource(DataSource):
    """``spark.read.format("collections").load("<collection>")``."""

    @classmethod
    def name(cls) -> str:
        return "collections"

    def schema(self) -> StructType:
        spec = Connection.of(self.options).spec()
        return spark_schema(spec, after=ADDED, text=CUT_ADDED if spec.buckets > 1 else ())

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
        spec, where = self._spec, self._where()
        # A scan in n parts costs Redis n scans (each part looks at every row and keeps its
        # share): one part by default, as Redis's single thread is what a read waits on
        # (bench/sql_read.py: two parts took 1.15x one part's time for 10^6 rows).
        shares = self._parts or 1
        if spec.buckets == 1:
            as_of = self._connection.read(lambda client: visible_time(client, spec.name))
            return [SnapshotPart(part, as_of) for part in split(spec, where, shares)]
        cut = self._connection.read(lambda client: read_cut(client, spec))
        return [
            SnapshotPart(part, cut.times[bucket], bucket, cut.text())
            for bucket in buckets_to_read(spec, where)
            for part in split(spec.unit(bucket), where, shares)
        ]

    def _where(self) -> Filter | None:
        if not self._pushed:
            return None
        return self._pushed[0] if len(self._pushed) == 1 else and_(*self._pushed)

    def read(self, partition: InputPartition) -> Iterator[tuple[object, ...]]:
        assert isinstance(partition, SnapshotPart)
        spec = self._spec if partition.bucket is None else self._spec.unit(partition.bucket)
        rows, _ = self._connection.read(
            lambda client: read_part(client, spec, partition.part, partition.as_of)
        )
        shown = partition.as_of if partition.cut is None else partition.cut
        for row, multiplicity in rows.items():
            yield (*row, multiplicity, shown)
