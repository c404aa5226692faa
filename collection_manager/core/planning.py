"""Planning request groups: consolidating the appends between deletes
(docs/concepts/collections-and-time.md, "Consolidation").

Appends to one collection between two of its deletes may be merged and consolidated
before they are written, so diffs that cancel are never written. Merging must not change
what the fuse decides, so appends are merged only while nothing can change the collection's
fence table: a delete of the collection (which may carry a fence) closes its open group.
Control requests touch no collection (a removal fences through its deletes), so they
close nothing.

Within a group, updates are consolidated per *source* ``(replica_id, epoch, valid_until,
ttl_ms)``: the fuse decides per replica epoch, and updates with different expirations must
not cancel each other, or a scheduled retraction would lose its insertion.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from collection_manager.core.requests import (
    Append,
    Control,
    Delete,
    Request,
    Update,
)
from collection_manager.core.specs import Row

Source = tuple[str, int, int | None, int | None]


def consolidate(updates: Iterable[Update]) -> list[Update]:
    """Sums the diffs per row. Zero sums stay: the rows were named, and the last append
    that names a row decides its TTL (docs/concepts/ttl-and-expiration.md); they write nothing.

    Returns:
        ``(row, total)`` pairs, each row once, in order of first appearance (so the result
        is deterministic for a given input).
    """
    totals: dict[Row, int] = {}
    for row, diff in updates:
        totals[row] = totals.get(row, 0) + diff
    return list(totals.items())


@dataclasses.dataclass(frozen=True)
class SourceUpdates:
    """The consolidated updates of one source within a group.

    Attributes:
        replica_id: the producing replica.
        epoch: its incarnation; the fuse drops the whole part when it is fenced.
        valid_until: the appends' ``valid_until`` (all equal within a part).
        ttl_ms: the appends' ``ttl_ms`` (all equal within a part).
        updates: consolidated: each row once, zero sums included (an append with a TTL
            refreshes the expiry of every row it names, one without a TTL ends it,
            docs/concepts/ttl-and-expiration.md).
        requests: how many appends the part merges.
    """

    replica_id: str
    epoch: int
    valid_until: int | None
    ttl_ms: int | None
    updates: tuple[Update, ...]
    requests: int


@dataclasses.dataclass(frozen=True)
class AppendGroup:
    """Merged appends to one collection, applied atomically at one time.

    Attributes:
        collection: the collection.
        first_index: position of its first append in the planned sequence.
        last_index: position of its last append.
        parts: per source, in order of first appearance.
    """

    collection: str
    first_index: int
    last_index: int
    parts: tuple[SourceUpdates, ...]

    @property
    def requests(self) -> int:
        """How many appends the group merges."""
        return sum(part.requests for part in self.parts)


@dataclasses.dataclass(frozen=True)
class DeleteStep:
    """A delete, applied on its own at its position ``index``."""

    index: int
    request: Delete


@dataclasses.dataclass(frozen=True)
class ControlStep:
    """A control request at position ``index``."""

    index: int
    request: Control


Step = AppendGroup | DeleteStep | ControlStep


def _source(append: Append) -> Source:
    return (append.replica_id, append.epoch, append.valid_until, append.ttl_ms)


def _ttl(source: Source) -> int | None:
    return source[3]


# Bounds of one merged group (docs/concepts/collections-and-time.md): a group is applied in one
# script call, and Redis runs nothing else meanwhile, so its size bounds how long other clients
# wait. An append that would push a group past either bound starts the next group; a single append
# larger than them is a group of its own (its size is bounded by the request limit).
MAX_GROUP_UPDATES = 2_000
MAX_GROUP_BYTES = 4 << 20


def approximate_bytes(append: Append) -> int:
    """About how many bytes the append's rows take when stored: strings by length, else 8."""
    return sum(
        8 + sum(len(v) if isinstance(v, str) else 8 for v in row) for row, _ in append.updates
    )


@dataclasses.dataclass
class _OpenGroup:
    collection: str
    first_index: int
    last_index: int = -1
    raw: dict[Source, list[Update]] = dataclasses.field(default_factory=dict)
    counts: dict[Source, int] = dataclasses.field(default_factory=dict)
    updates: int = 0
    size: int = 0

    def takes(self, source: Source) -> bool:
        """Whether an append of ``source`` may join: one with a TTL joins only appends of
        its own source. Then every append of the group sets the same expiry (now + its
        ttl_ms), and a row's is set exactly when it is in the collection after the group,
        merged or not; with another source's updates in between, it could differ."""
        if source in self.raw or not self.raw:
            return True
        return _ttl(source) is None and all(_ttl(joined) is None for joined in self.raw)

    def has_room(self, updates: int, size: int) -> bool:
        fits = self.updates + updates <= MAX_GROUP_UPDATES and self.size + size <= MAX_GROUP_BYTES
        return fits or not self.raw

    def add(self, index: int, append: Append, size: int) -> None:
        source = _source(append)
        self.raw.setdefault(source, []).extend(append.updates)
        self.counts[source] = self.counts.get(source, 0) + 1
        self.last_index = index
        self.updates += len(append.updates)
        self.size += size

    def build(self) -> AppendGroup:
        parts = tuple(
            SourceUpdates(
                *source,
                tuple(consolidate(updates)),
                self.counts[source],
            )
            for source, updates in self.raw.items()
        )
        return AppendGroup(self.collection, self.first_index, self.last_index, parts)


class _Planner:
    def __init__(self, split_on_source_change: bool) -> None:
        self.split = split_on_source_change
        self.open: dict[str, _OpenGroup] = {}
        self.steps: list[Step] = []

    def close(self, collection: str) -> None:
        group = self.open.pop(collection, None)
        if group is not None:
            self.steps.append(group.build())

    def close_all(self) -> None:
        for group in sorted(self.open.values(), key=lambda g: g.first_index):
            self.steps.append(group.build())
        self.open.clear()

    def append(self, index: int, append: Append) -> None:
        group = self.open.get(append.collection)
        size = approximate_bytes(append)
        if group is not None and (
            (self.split and _source(append) not in group.raw)
            or not group.takes(_source(append))
            or not group.has_room(len(append.updates), size)
        ):
            self.close(append.collection)
            group = None
        if group is None:
            group = self.open[append.collection] = _OpenGroup(append.collection, index)
        group.add(index, append, size)

    def other(self, index: int, request: Delete | Control) -> None:
        if isinstance(request, Delete):
            self.close(request.collection)
            self.steps.append(DeleteStep(index, request))
            return
        self.steps.append(ControlStep(index, request))


def plan_groups(requests: Sequence[Request], *, split_on_source_change: bool = False) -> list[Step]:
    """Merges the appends between deletes into consolidated groups of bounded size.

    Applying the steps in order gives the same collection contents, fences and counts of
    requests, retractions and fused appends as applying ``requests`` one by one. (Invalid
    retractions may differ: a retraction consolidated with its insertion never goes
    negative.) Steps of different collections may be reordered relative to each other;
    each collection's own steps keep their order.

    Args:
        requests: requests in application order (e.g. one Kafka partition, offset order).
        split_on_source_change: also close a group when the next append comes from
            another source, so that every group has exactly one part.

    Returns:
        The steps; an ``AppendGroup`` is emitted when it closes: before a delete of its
        collection, or an append that would take it past
        ``MAX_GROUP_UPDATES`` updates or ``MAX_GROUP_BYTES`` approximate bytes.
    """
    planner = _Planner(split_on_source_change)
    for index, request in enumerate(requests):
        if isinstance(request, Append):
            planner.append(index, request)
        else:
            planner.other(index, request)
    planner.close_all()
    return planner.steps
