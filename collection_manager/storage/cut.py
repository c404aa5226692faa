"""Reading and settling the cut of a bucketed collection on Redis (``core/cut.py`` says how).

A read fetches the settled cut (``cut_key``: each bucket's settled time, a version, the
groups given up), then one ``cm_cut`` call per bucket (the time readers see there now and
the parts applied after the settled time), and computes the consistent cut. A settle, by
the consumer, does the same, records the cut it found as the settled one (``cm_settle``,
only if no other settle came first) and trims the parts at or before the *previous*
settled cut: a reader that fetched the version before this settle asked only for parts
after that one, so the trim takes nothing it needs; a reader that meets a version two
ahead of its own reads again.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import redis

from collection_manager.core.cut import (
    BucketView,
    Cut,
    CutError,
    Part,
    consistent_cut,
    given_up,
    incomplete,
)
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import as_text
from collection_manager.storage.keys import CollectionKeys, cut_key
from collection_manager.storage.library import CUT, SETTLE, call
from collection_manager.storage.replication import Durability

# The most unsettled parts one bucket may hold when read: the consumer settles them about
# twice a second, so more means it is not running; a reader then refuses rather than do
# work in proportion to how long it has been down.
MAX_UNSETTLED_PARTS = 10_000
# How long a read starts again while settles overtake it (each settle is about 0.5 s
# apart, so only a read slower than that, again and again, runs out of it).
OVERTAKEN_PATIENCE_S = 10.0
VERSION_FIELD = "v"
GIVEN_UP_PREFIX = "x:"


@dataclasses.dataclass(frozen=True)
class Settled:
    """A bucketed collection's settled cut as recorded, with its version."""

    version: str
    times: tuple[int, ...]
    given_up: frozenset[str]


def read_settled(client: redis.Redis, spec: CollectionSpec) -> Settled:
    """The settled cut recorded for ``spec`` (all zeros before the first settle)."""
    raw = {as_text(k): as_text(v) for k, v in client.hgetall(cut_key(spec.collection)).items()}
    times = tuple(int(raw.get(str(bucket), 0)) for bucket in range(spec.buckets))
    groups = frozenset(f[len(GIVEN_UP_PREFIX) :] for f in raw if f.startswith(GIVEN_UP_PREFIX))
    return Settled(raw.get(VERSION_FIELD, ""), times, groups)


def read_views(
    client: redis.Redis, spec: CollectionSpec, floor: Sequence[int], readable: bool = False
) -> list[BucketView]:
    """Each bucket's view: the time readers see there now (with ``readable``, the latest
    time whose changes its log holds whole: not a delete's still in progress), and the
    parts applied after ``floor``.

    Raises:
        CutError: when a bucket holds more than ``MAX_UNSETTLED_PARTS`` unsettled parts.
    """
    views = []
    for unit, settled in zip(spec.units(), floor, strict=True):
        keys = CollectionKeys(unit.name)
        reply: list[Any] = call(
            client,
            CUT,
            [keys.time, keys.pending, keys.parts],
            [settled, MAX_UNSETTLED_PARTS + 1],
            read_only=True,
        )
        members = reply[2::2]
        if len(members) > MAX_UNSETTLED_PARTS:
            raise CutError(
                f"bucket {unit.name} holds more than {MAX_UNSETTLED_PARTS} unsettled parts "
                "of requests sent to several buckets (MAX_UNSETTLED_PARTS): the consumer "
                "settles them while it runs; is it running?",
                collection=spec.collection,
            )
        parts = tuple(
            Part.parse(as_text(m), int(float(t))) for m, t in zip(members, reply[3::2], strict=True)
        )
        views.append(BucketView(int(reply[1 if readable else 0]), parts))
    return views


def read_cut(client: redis.Redis, spec: CollectionSpec, readable: bool = False) -> Cut:
    """The greatest consistent cut of ``spec``'s buckets now (with ``readable``, of the
    times whose changes each bucket's log holds whole, as a reader of changes needs).

    Raises:
        CutError: when settles kept overtaking the read, or too many parts are unsettled.
    """
    deadline = time.monotonic() + OVERTAKEN_PATIENCE_S
    while time.monotonic() < deadline:
        settled = read_settled(client, spec)
        views = read_views(client, spec, settled.times, readable)
        if _versions_apart(settled.version, read_settled(client, spec).version) < 2:
            return consistent_cut(views, settled.given_up)
    raise CutError(
        f"the consumer settled {spec.collection}'s cut again and again while it was read, "
        f"for {OVERTAKEN_PATIENCE_S:g} s: read again",
        collection=spec.collection,
    )


def _versions_apart(before: str, after: str) -> int:
    return int(after or 0) - int(before or 0)


@dataclasses.dataclass(frozen=True)
class SettleResult:
    """What one settle did: the cut it recorded (None: another settle came first), the
    parts it trimmed and the groups it gave up."""

    cut: Cut | None
    trimmed: int
    given_up: tuple[str, ...]


def settle(
    client: redis.Redis,
    spec: CollectionSpec,
    read_all_since_ms: int,
    delivery_ms: int,
    durability: Durability | None = None,
) -> SettleResult:
    """Records ``spec``'s consistent cut now as settled; trims parts the last one passed.

    Args:
        read_all_since_ms: the consumer's TTL clock: it has read everything Kafka held then.
        delivery_ms: how long a producer may take to deliver a message (``core/cut.given_up``).
        durability: the consumer's replication barrier (``CM_REDIS_REPLICA_ACKS``): what the
            settled cut covers is on the replicas before it is recorded, so a failover can
            lose only unsettled parts, which the replay applies again (with new times) while
            their groups stay held back, never a settled one.

    Raises:
        ReplicasBehindError: the replicas did not confirm; nothing was recorded.
    """
    settled = read_settled(client, spec)
    views = read_views(client, spec, settled.times)
    dropped = given_up(incomplete(views), read_all_since_ms, delivery_ms)
    gone = settled.given_up - {part.group for view in views for part in view.parts}
    cut = consistent_cut(views, settled.given_up | set(dropped))
    if durability is not None:
        durability.confirm(client, "the bucketed collections' cuts are settled once they do")
    fields: list[str | int] = []
    for bucket, at in enumerate(cut.times):
        fields += [str(bucket), max(at, settled.times[bucket])]
    for group in dropped:
        fields += [GIVEN_UP_PREFIX + group, 1]
    wrote = call(client, SETTLE, [cut_key(spec.collection)], [settled.version, *fields])
    if not int(wrote):
        return SettleResult(None, 0, ())
    trimmed = 0
    for unit, floor in zip(spec.units(), settled.times, strict=True):
        trimmed += int(client.zremrangebyscore(CollectionKeys(unit.name).parts, "-inf", floor))
    if gone:  # their parts were trimmed in an earlier settle: nothing refers to them
        client.hdel(cut_key(spec.collection), *(GIVEN_UP_PREFIX + g for g in gone))
    return SettleResult(cut, trimmed, tuple(dropped))
