"""One consistent time across the buckets of a collection: the *cut* (docs/concepts/buckets.md).

Each bucket has its own times. A read of a bucketed collection reads bucket ``b`` at time
``T[b]``; the vector ``T`` is a cut. A request sent to several buckets is a *group* of
parts, each applied in its own bucket at its own time, by whichever task applies that
bucket's partition, so there are moments when some parts are applied and others not. A cut
is *consistent* when it holds every group whole or not at all: all of its parts at or
before their bucket's ``T``, or none.

Every bucket records, in the call that applies a part, the group, its number of parts and
the time it took (``CollectionKeys.parts``). A reader takes, per bucket, the time readers
see now and the parts applied since the *settled* cut (below), and computes the greatest
consistent cut at or below those times (:func:`consistent_cut`): start from the latest
times, and while a group is split by the cut (or not every part of it was applied yet),
move each bucket that holds a part of it back to just before that part. Times only move
down, so this ends; and the maximum of two consistent cuts is consistent, so the greatest
one is unique and a later reader's is never older.

The consumer settles a cut now and then (``storage/cut.py``): every group with a part at
or before it is whole in it. Parts at or before the settled cut are trimmed, so what a
reader fetches stays bounded; a reader that started before a trim learns it from the
settled cut's version and reads again.

A group whose missing parts will never come (a writer that died between its parts, a part
refused as a dead letter) would hold the cut back forever: once every part produced with
it must have reached the consumer (:func:`given_up`), the consumer gives it up and readers
see its applied parts (``cm_consumer_cut_groups_given_up_total`` counts them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence

from collection_manager.core.errors import CollectionManagerError


class CutError(CollectionManagerError):
    """No consistent cut could be read (too many unsettled parts, a settle meanwhile)."""


@dataclasses.dataclass(frozen=True)
class Part:
    """A part of a group, applied in a bucket at ``time``, at ``applied_ms`` (consumer)."""

    group: str
    parts: int
    time: int
    applied_ms: int

    @classmethod
    def parse(cls, member: str, time: int) -> Part:
        """The part of a ``CollectionKeys.parts`` member ``<group>|<parts>|<applied_ms>``."""
        group, parts, applied_ms = member.rsplit("|", 2)
        return cls(group, int(parts), time, int(applied_ms))


@dataclasses.dataclass(frozen=True)
class BucketView:
    """What a reader learns of one bucket in one call: the time readers see now, and the
    parts applied after the settled cut's time there."""

    time: int
    parts: tuple[Part, ...] = ()


@dataclasses.dataclass(frozen=True)
class Cut:
    """A time per bucket, bucket 0 first."""

    times: tuple[int, ...]

    def text(self) -> str:
        """How answers print it: the buckets' times joined by commas, e.g. ``12,40,7``."""
        return ",".join(str(t) for t in self.times)

    @classmethod
    def parse(cls, text: str, buckets: int) -> Cut:
        """The cut of its ``text``.

        Raises:
            CutError: unless it is ``buckets`` non-negative integers joined by commas.
        """
        pieces = text.split(",")
        if len(pieces) != buckets or not all(p.strip().isdigit() for p in pieces):
            raise CutError(
                f"{text!r} is no cut of {buckets} buckets: give {buckets} times >= 0 joined "
                "by commas, as an answer's as_of prints them"
            )
        return cls(tuple(int(p) for p in pieces))

    @property
    def total(self) -> int:
        """The sum of its times: grows with every later cut of the collection."""
        return sum(self.times)


def _placed(views: Sequence[BucketView]) -> dict[str, tuple[int, list[tuple[int, int]]]]:
    """Per group: its number of parts, and ``(bucket, time)`` of each part seen."""
    groups: dict[str, tuple[int, list[tuple[int, int]]]] = {}
    for bucket, view in enumerate(views):
        for part in view.parts:
            groups.setdefault(part.group, (part.parts, []))[1].append((bucket, part.time))
    return groups


def consistent_cut(views: Sequence[BucketView], given_up: Collection[str] = ()) -> Cut:
    """The greatest consistent cut at or below each bucket's time.

    Args:
        views: one per bucket, each holding every part applied there after the settled
            cut (the settled cut itself is consistent, so nothing before it splits a group).
        given_up: groups to take as whole with the parts they have.
    """
    times = [view.time for view in views]
    groups = _placed(views)
    moved = True
    while moved:
        moved = False
        for group, (count, placed) in groups.items():
            inside = [(bucket, time) for bucket, time in placed if time <= times[bucket]]
            whole = group in given_up or len({bucket for bucket, _ in placed}) >= count
            if inside and (len(inside) < len(placed) or not whole):
                for bucket, time in inside:
                    times[bucket] = time - 1
                moved = True
    return Cut(tuple(times))


def held_since(views: Sequence[BucketView], cut: Cut) -> int | None:
    """When the oldest change ``cut`` holds back was applied (ms, the consumer's clock), or
    None when it holds back none (it is at every bucket's time).

    A bucket the cut holds back stands just before a part (:func:`consistent_cut` moves it
    only there), and that part is the first change of the bucket readers do not see; parts
    are applied in their bucket's time order, so the earliest ``applied_ms`` of the parts
    after the cut is when the oldest of them all was applied.
    """
    held = [
        part.applied_ms
        for view, at in zip(views, cut.times, strict=True)
        for part in view.parts
        if part.time > at
    ]
    return min(held, default=None)


def incomplete(views: Sequence[BucketView]) -> dict[str, int]:
    """Groups not every part of which was applied yet -> when their first part was (ms)."""
    out: dict[str, int] = {}
    for group, (count, placed) in _placed(views).items():
        if len({bucket for bucket, _ in placed}) < count:
            first = min(
                part.applied_ms for view in views for part in view.parts if part.group == group
            )
            out[group] = first
    return out


def given_up(open_groups: dict[str, int], read_all_since_ms: int, delivery_ms: int) -> list[str]:
    """The incomplete groups whose missing parts can no longer come.

    A writer sends a group's parts together, and a producer delivers a message within
    ``delivery_ms`` (its ``delivery.timeout.ms``) or never. Every part was sent before the
    first part was applied, so once the consumer has read all of Kafka as of later than
    that plus ``delivery_ms`` (``read_all_since_ms``: its TTL clock,
    docs/concepts/ttl-and-expiration.md), a part still missing was never delivered.
    """
    return sorted(
        group for group, first in open_groups.items() if read_all_since_ms > first + delivery_ms
    )
