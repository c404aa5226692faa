"""The requests of the wire protocol (docs/concepts/requests-and-ordering.md) as plain, immutable
Python values.

``schemas.codec`` turns them into bytes and back; the consumer validates them against the
collection catalog with :func:`validate_request` before applying them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from collection_manager.core.buckets import (
    MAX_BUCKETS,
    BucketPart,
    bucket_key,
    bucket_of,
    unit_name,
)
from collection_manager.core.errors import (
    EpochError,
    SchemaError,
    UnknownCollectionError,
)
from collection_manager.core.fences import Fence
from collection_manager.core.filters import Filter, validate
from collection_manager.core.names import check_collection_name, check_replica_id
from collection_manager.core.numbers import INT_LIMIT, in_domain, outside
from collection_manager.core.specs import CollectionSpec, Row, Value, validate_row

# The longest row TTL: 100 years. The consumer's clock plus it stays far inside the
# numeric domain (core/numbers.py), where expiry times are stored exactly.
MAX_TTL_MS = 100 * 365 * 24 * 3600 * 1000

Update = tuple[Row, int]
"""A differential update: a row and the signed change of its multiplicity."""


def _as_updates(updates: Iterable[tuple[Iterable[Value], int]]) -> tuple[Update, ...]:
    return tuple((tuple(row), diff) for row, diff in updates)


@dataclasses.dataclass(frozen=True)
class Append:
    """Updates of one collection from one replica incarnation.

    Attributes:
        collection: the collection id (and Kafka key).
        replica_id: the producing replica.
        epoch: the producing incarnation; appends from fenced epochs are dropped.
        updates: ``(row, diff)`` pairs; rows and the sequence become tuples.
        produced_at: when the agent produced it, ms since the Unix epoch (metadata only).
        valid_until: when set, the rows must be retracted at this time (ms,
        docs/concepts/ttl-and-expiration.md).
        ttl_ms: when set, each row it names expires this long after the consumer applied
            it, unless appended again with a TTL (docs/concepts/ttl-and-expiration.md, "Row TTL").
        bucket: the bucket of a bucketed collection it is for (``core/buckets.py``), None
            for an unbucketed one.
    """

    collection: str
    replica_id: str
    epoch: int
    updates: tuple[Update, ...]
    produced_at: int
    valid_until: int | None = None
    ttl_ms: int | None = None
    bucket: BucketPart | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "updates", _as_updates(self.updates))


@dataclasses.dataclass(frozen=True)
class Delete:
    """Retract every row of ``collection`` matching ``filter`` (docs/concepts/deletes.md).

    Attributes:
        collection: the collection id (and Kafka key).
        filter: which rows to retract.
        reason: why, for people reading logs and dead letters.
        fence: when set, recorded after the retractions so the fuse drops later appends
            from the dead epochs. A fenced delete of an epoch its collection (its bucket)
            fences already retracts nothing: it is a late duplicate of a removal applied
            there, and the replica's rows there are a newer incarnation's.
        bucket: the bucket of a bucketed collection it is for, None for an unbucketed one.
    """

    collection: str
    filter: Filter
    reason: str = ""
    fence: Fence | None = None
    bucket: BucketPart | None = None


@dataclasses.dataclass(frozen=True)
class ReplicaAdded:
    """A replica incarnation started with ``epoch``."""

    replica_id: str
    epoch: int


@dataclasses.dataclass(frozen=True)
class ReplicaRemoved:
    """A replica incarnation was removed; its epochs ``<= epoch`` are dead."""

    replica_id: str
    epoch: int


@dataclasses.dataclass(frozen=True)
class Heartbeat:
    """A replica incarnation is alive; ``sent_at`` is the agent's clock (ms), if known."""

    replica_id: str
    epoch: int
    sent_at: int | None = None


# The longest group id of a request sent to several buckets (uuid4 hex has 32).
MAX_GROUP_ID = 64

MIN_EPOCH = 1  # the first value of the controller's epoch counter (INCR from nothing)

Control = ReplicaAdded | ReplicaRemoved | Heartbeat
Request = Append | Delete | ReplicaAdded | ReplicaRemoved | Heartbeat


def collection_of(request: Request) -> str | None:
    """The collection a request writes to, or None for control requests."""
    return request.collection if isinstance(request, Append | Delete) else None


def unit_of(request: Request) -> str | None:
    """The storage unit a request writes to (``core/buckets.py``), or None for control
    requests: the collection, or for a bucketed one ``<collection>#<bucket>``."""
    if not isinstance(request, Append | Delete):
        return None
    return unit_name(request.collection, None if request.bucket is None else request.bucket.bucket)


def request_key(request: Request) -> str:
    """The Kafka key of a request: its unit (the bucket key rule), or its replica id."""
    unit = unit_of(request)
    if unit is not None:
        return unit
    assert isinstance(request, ReplicaAdded | ReplicaRemoved | Heartbeat)
    return request.replica_id


def epoch_claims(request: Request) -> tuple[tuple[str, int], ...]:
    """The ``(replica_id, epoch)`` pairs of ``request`` that the controller must have issued.

    Control requests and a delete's fence (``core/epochs.py`` checks them); appends claim
    none: their epoch is judged by the fuse.
    """
    if isinstance(request, Heartbeat | ReplicaAdded | ReplicaRemoved):
        return ((request.replica_id, request.epoch),)
    if isinstance(request, Delete) and request.fence is not None:
        return ((request.fence.replica_id, request.fence.epoch),)
    return ()


def _replicas_and_epochs(request: Request) -> list[tuple[str, int]]:
    pairs = list(epoch_claims(request))
    if isinstance(request, Append):
        pairs.append((request.replica_id, request.epoch))
    return pairs


def validate_request(request: Request, specs: Mapping[str, CollectionSpec]) -> None:
    """Checks a decoded request on its own and against the collection catalog.

    Names and epochs are checked before the catalog lookup, so a bad name is refused for
    what it is, not as an unknown collection. Whether an epoch was issued needs the
    controller's counters: ``core/epochs.py`` checks that, in the consumer.

    Args:
        request: the request.
        specs: the known collections by name.

    Raises:
        InvalidNameError: for a collection name or replica id outside ``core/names.py``.
        EpochError: for an epoch below :data:`MIN_EPOCH`.
        SchemaError: for a ``ttl_ms`` outside ``1..MAX_TTL_MS``.
        UnknownCollectionError: when it names a collection not in ``specs``.
        SchemaError: for a row that does not fit the collection's schema.
        FilterError: for an invalid delete filter.
    """
    name = collection_of(request)
    _validate_alone(request, name)
    if name is None:
        return
    if name not in specs:
        known = ", ".join(sorted(specs)) or "none"
        raise UnknownCollectionError(
            f"unknown collection {name!r}; known: {known}", collection=name
        )
    spec = specs[name]
    assert isinstance(request, Append | Delete)
    _validate_bucket(request, spec)
    if isinstance(request, Delete):
        validate(request.filter, spec)
    else:
        _validate_updates(request, spec)


def _validate_alone(request: Request, name: str | None) -> None:
    """What needs no catalog: the names, the epochs and an append's ``ttl_ms``."""
    if name is not None:
        check_collection_name(name)
    for replica_id, epoch in _replicas_and_epochs(request):
        check_replica_id(replica_id)
        if epoch < MIN_EPOCH:
            raise EpochError(
                f"epoch {epoch} of replica {replica_id} is below {MIN_EPOCH}, "
                f"the first epoch a controller issues",
                collection=name,
            )
    ttl_ms = request.ttl_ms if isinstance(request, Append) else None
    if ttl_ms is not None and (isinstance(ttl_ms, bool) or not 1 <= ttl_ms <= MAX_TTL_MS):
        raise SchemaError(
            f"ttl_ms {ttl_ms} is outside 1..{MAX_TTL_MS} (1 ms to 100 years)", collection=name
        )


def _validate_bucket(request: Append | Delete, spec: CollectionSpec) -> None:
    """The bucket rule: a bucketed collection's request names one of its buckets, and an
    append's rows all lie in it (``core/buckets.py``)."""
    part, name = request.bucket, request.collection
    if spec.buckets == 1:
        if part is not None:
            raise SchemaError(
                f"{name} is not bucketed, but the request names bucket {part.bucket}",
                collection=name,
            )
        return
    if part is None:
        raise SchemaError(
            f"{name} has {spec.buckets} buckets (by {spec.bucket_column}): each request names "
            f"its bucket and is keyed {bucket_key(name, 0)}..{bucket_key(name, spec.buckets - 1)}"
            " (producers.routing splits one)",
            collection=name,
        )
    if not 0 <= part.bucket < spec.buckets:
        raise SchemaError(
            f"bucket {part.bucket} of {name} is outside 0..{spec.buckets - 1}", collection=name
        )
    if not 1 <= part.parts <= MAX_BUCKETS or (part.parts > 1) != (part.group is not None):
        raise SchemaError(
            f"a request in {part.parts} parts (1 to {MAX_BUCKETS}) must name its group "
            f"exactly when it has more than one part (group {part.group!r})",
            collection=name,
        )
    if part.group is not None and not 1 <= len(part.group) <= MAX_GROUP_ID:
        raise SchemaError(
            f"group id of {len(part.group)} characters; 1 to {MAX_GROUP_ID} allowed",
            collection=name,
        )
    if isinstance(request, Append):
        _validate_rows_bucket(request, spec, part.bucket)


def _validate_rows_bucket(request: Append, spec: CollectionSpec, bucket: int) -> None:
    """Every row of an append lies in its request's bucket."""
    position, name = spec.bucket_position, request.collection
    for row, _ in request.updates:
        value = row[position] if len(row) > position else None
        if isinstance(value, str | int) and bucket_of(value, spec.buckets) != bucket:
            raise SchemaError(
                f"row {row!r} of {name} lies in bucket {bucket_of(value, spec.buckets)}, "
                f"not in bucket {bucket} of its request (bucket = CRC-32 of "
                f"{spec.bucket_column} mod {spec.buckets})",
                collection=name,
            )


def _validate_updates(request: Append, spec: CollectionSpec) -> None:
    name = request.collection
    if request.valid_until is not None and not 0 <= request.valid_until <= INT_LIMIT:
        raise SchemaError(outside(request.valid_until, "valid_until"), collection=name)
    for row, diff in request.updates:
        validate_row(row, spec)
        if isinstance(diff, bool) or not isinstance(diff, int):
            raise SchemaError(f"diff of {row!r} must be an integer, got {diff!r}", collection=name)
        if not in_domain(diff):
            raise SchemaError(f"{outside(diff, 'diff')} (row {row!r})", collection=name)
