"""Reading and settling the cut of a bucketed collection on Redis (``core/cut.py`` says how).

A read fetches the settled cut (``cut_key``: each bucket's settled time, a version, the
groups given up), then a ``cm_cut`` call per bucket (the time readers see there now and
the parts applied after the settled time), all of them in one pipeline per Redis node
(``per_node.py``), the settled cut's version read again at the end of the last, and
computes the consistent cut: two round trips on one Redis, one more per further node of a
cluster, where one call per bucket took as many round trips as buckets. A settle, by
the consumer, does the same, records the cut it found as the settled one (``cm_settle``,
only if no other settle came first) and trims the parts at or before the *previous*
settled cut: a reader that fetched the version before this settle asked only for parts
after that one, so the trim takes nothing it needs; a reader that meets a version two
ahead of its own reads again.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Mapping, Sequence, Set
from typing import Any

import redis

from collection_manager.core.cut import (
    BucketView,
    Cut,
    CutError,
    Part,
    consistent_cut,
    given_up,
    held_since,
    incomplete,
)
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.client import as_text
from collection_manager.storage.keys import CollectionKeys, cut_key
from collection_manager.storage.library import CUT, SETTLE, call, function_name
from collection_manager.storage.per_node import Keyed, pipelined
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
    return _settled_of(spec, client.hgetall(cut_key(spec.collection)))


def _settled_of(spec: CollectionSpec, hashed: Mapping[Any, Any]) -> Settled:
    raw = {as_text(k): as_text(v) for k, v in hashed.items()}
    times = tuple(int(raw.get(str(bucket), 0)) for bucket in range(spec.buckets))
    groups = frozenset(f[len(GIVEN_UP_PREFIX) :] for f in raw if f.startswith(GIVEN_UP_PREFIX))
    return Settled(raw.get(VERSION_FIELD, ""), times, groups)


def cut_call(unit: CollectionSpec, floor: int) -> tuple[list[str], list[int]]:
    """The keys and arguments of ``cm_cut`` for a bucket's unit above its settled ``floor``."""
    keys = CollectionKeys(unit.name)
    return [keys.time, keys.pending, keys.parts], [floor, MAX_UNSETTLED_PARTS + 1]


def bucket_view(unit: CollectionSpec, reply: Sequence[Any], readable: bool) -> BucketView:
    """A bucket's view from its ``cm_cut`` reply (with ``readable``, its readable time).

    Raises:
        CutError: when the bucket holds more than ``MAX_UNSETTLED_PARTS`` unsettled parts.
    """
    members = reply[2::2]
    if len(members) > MAX_UNSETTLED_PARTS:
        raise CutError(
            f"bucket {unit.name} holds more than {MAX_UNSETTLED_PARTS} unsettled parts "
            "of requests sent to several buckets (MAX_UNSETTLED_PARTS): the consumer "
            "settles them while it runs; is it running?",
            collection=unit.collection,
        )
    parts = tuple(
        Part.parse(as_text(m), int(float(t))) for m, t in zip(members, reply[3::2], strict=True)
    )
    return BucketView(int(reply[1 if readable else 0]), parts)


def read_views(
    client: redis.Redis, spec: CollectionSpec, floor: Sequence[int], readable: bool = False
) -> list[BucketView]:
    """Each bucket's view: the time readers see there now (with ``readable``, the latest
    time whose changes its log holds whole: not a delete's still in progress), and the
    parts applied after ``floor``; fetched in one pipeline per node.

    Raises:
        CutError: when a bucket holds more than ``MAX_UNSETTLED_PARTS`` unsettled parts.
    """
    return _views_then_version(client, spec, floor, readable, check=False)[0]


def _views_then_version(
    client: redis.Redis, spec: CollectionSpec, floor: Sequence[int], readable: bool, check: bool
) -> tuple[list[BucketView], str]:
    """The buckets' views and, with ``check``, the settled cut's version read after every
    one of them (the end of the last node's pipeline, ``per_node.pipelined``)."""
    units = spec.units()
    name = function_name(CUT)
    commands = []
    for unit, settled in zip(units, floor, strict=True):
        keys, args = cut_call(unit, settled)
        commands.append(Keyed(keys[0], ("FCALL_RO", name, len(keys), *keys, *args)))
    if check:
        commands.append(Keyed(cut_key(spec.collection), ("HGETALL", cut_key(spec.collection))))
    replies = pipelined(client, commands)
    views, again = [], False
    for unit, settled, reply in zip(units, floor, replies[: len(units)], strict=True):
        if isinstance(reply, Exception):
            # Failed in the pipeline (a slot moving, a failover, no library): alone, with
            # the waits and redirections of a single call, which raises what stays wrong.
            keys, args = cut_call(unit, settled)
            reply, again = call(client, CUT, keys, args, read_only=True), True
        views.append(bucket_view(unit, reply, readable))
    if not check:
        return views, ""
    # A bucket read again came after the version in the pipeline: read it once more.
    settled_raw = replies[-1]
    if again or isinstance(settled_raw, Exception):
        settled_raw = client.hgetall(cut_key(spec.collection))
    return views, _settled_of(spec, settled_raw).version


def read_cut(client: redis.Redis, spec: CollectionSpec, readable: bool = False) -> Cut:
    """The greatest consistent cut of ``spec``'s buckets now (with ``readable``, of the
    times whose changes each bucket's log holds whole, as a reader of changes needs).

    Raises:
        CutError: when settles kept overtaking the read, or too many parts are unsettled.
    """
    deadline = time.monotonic() + OVERTAKEN_PATIENCE_S
    while time.monotonic() < deadline:
        settled = read_settled(client, spec)
        views, after = _views_then_version(client, spec, settled.times, readable, check=True)
        if _versions_apart(settled.version, after) < 2:
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
    """What one settle of ``collection`` did: the cut it recorded (None: another settle
    came first), the parts it trimmed and the groups it gave up; and when the oldest change
    the cut it found holds back was applied (``core/cut.held_since``; None: none held)."""

    cut: Cut | None
    trimmed: int
    given_up: tuple[str, ...]
    collection: str
    held_since_ms: int | None


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
    held = held_since(views, cut)
    if durability is not None:
        durability.confirm(client, "the bucketed collections' cuts are settled once they do")
    fields: list[str | int] = []
    for bucket, at in enumerate(cut.times):
        fields += [str(bucket), max(at, settled.times[bucket])]
    for group in dropped:
        fields += [GIVEN_UP_PREFIX + group, 1]
    wrote = call(client, SETTLE, [cut_key(spec.collection)], [settled.version, *fields])
    if not int(wrote):
        return SettleResult(None, 0, (), spec.collection, held)
    trimmed = _trim_passed(client, spec, settled.times, gone)
    return SettleResult(cut, trimmed, tuple(dropped), spec.collection, held)


def _trim_passed(
    client: redis.Redis, spec: CollectionSpec, floors: Sequence[int], gone: Set[str]
) -> int:
    """Trims each bucket's parts at or below the cut settled before (``floors``) and forgets
    the ``gone`` groups; returns how many parts went."""
    trimmed = 0
    for unit, floor in zip(spec.units(), floors, strict=True):
        trimmed += int(client.zremrangebyscore(CollectionKeys(unit.name).parts, "-inf", floor))
    if gone:  # their parts were trimmed in an earlier settle: nothing refers to them
        client.hdel(cut_key(spec.collection), *(GIVEN_UP_PREFIX + g for g in gone))
    return trimmed
