"""The answers of the catalog and the fleet: what ``/api/v1/collections``, ``/api/v1/
collections/{name}`` and ``/api/v1/replicas`` send, what ``collections list``, ``collections
show`` and ``replicas list`` print with ``--format json``, and what the client returns.

Times are ms since the Unix epoch; a bucketed collection's rows, time and counters are its
buckets' sums (its time is its cut's total: read ``as_of`` for a position).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from collection_manager.answers.fields import Doc
from collection_manager.core.buckets import DEFAULT_BUCKET_COLUMN, MAX_BUCKETS
from collection_manager.core.partitions import Partitioning
from collection_manager.core.specs import CollectionSpec

ColumnType = Literal["long", "double", "boolean", "string"]
ReplicaState = Literal["active", "removing", "removed"]


@dataclasses.dataclass(frozen=True)
class Column:
    """A column of a collection's rows."""

    name: str
    type: ColumnType
    nullable: bool
    indexed: Annotated[bool, Doc("Has an index: where COLUMN=v reads only its rows.")]


@dataclasses.dataclass(frozen=True)
class Collection:
    """A collection as the listing shows it."""

    name: str
    rows: Annotated[int, Doc("Distinct rows (a bucketed one: its buckets' sum).", minimum=0)]
    time: Annotated[int, Doc("Latest readable time (a bucketed one: its buckets' sum).")]
    columns: tuple[Column, ...]
    indexed_columns: tuple[str, ...]
    buckets: Annotated[int, Doc("Its buckets; 1: unbucketed.", minimum=1, maximum=MAX_BUCKETS)]
    bucket_column: Annotated[str | None, Doc("The column that picks a row's bucket.")]

    @property
    def column_names(self) -> tuple[str, ...]:
        return tuple(column.name for column in self.columns)


@dataclasses.dataclass(frozen=True)
class Ttl:
    """The rows with a TTL pending."""

    rows: Annotated[int, Doc(minimum=0)]
    next_expiry_ms: Annotated[int | None, Doc("When the next of them expires; null: none.")]


@dataclasses.dataclass(frozen=True)
class BucketRows:
    """Where one bucket of a bucketed collection stands."""

    bucket: Annotated[int, Doc(minimum=0)]
    rows: Annotated[int, Doc(minimum=0)]
    time: int


@dataclasses.dataclass(frozen=True)
class CollectionDetail(Collection):
    """One collection with what only its own endpoint shows."""

    counters: Annotated[Mapping[str, int], Doc("What the consumer applied to it.")]
    ttl: Ttl
    row_schema: Annotated[Mapping[str, Any], Doc("The Avro record schema of its rows.")]
    bucket_rows: Annotated[tuple[BucketRows, ...], Doc("Each bucket's; empty: unbucketed.")]
    partitioning: Annotated[
        Partitioning | None,
        Doc("Each bucket's Kafka partition; null: its keys' hash places them."),
    ]

    def spec(self) -> CollectionSpec:
        """Its definition as the core takes it (``producers.routing`` routes by it)."""
        return CollectionSpec(
            self.name,
            self.row_schema,
            self.indexed_columns,
            self.buckets,
            self.bucket_column or DEFAULT_BUCKET_COLUMN,
            partitioning=self.partitioning,
        )


@dataclasses.dataclass(frozen=True)
class CollectionList:
    """Every collection, by name."""

    collections: tuple[Collection, ...]


@dataclasses.dataclass(frozen=True)
class Replica:
    """A replica: its epoch, state, lease and heartbeat."""

    replica_id: str
    epoch: int
    state: ReplicaState
    lease_expires_ms: Annotated[int | None, Doc("When its lease ends; null: none.")]
    lease_left_ms: Annotated[
        int | None, Doc("Its lease left by the reader's clock (negative once past).")
    ]
    last_heartbeat_ms: int | None
    added_ms: int
    reason: Annotated[str, Doc("Why it was removed (empty while active).")]


@dataclasses.dataclass(frozen=True)
class ReplicaList:
    """The replicas of a namespace, as read at ``at_ms``."""

    at_ms: int
    namespace: str
    replicas: tuple[Replica, ...]
