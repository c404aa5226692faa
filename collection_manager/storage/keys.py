"""Redis key layout of a storage collection.

Every key of collection ``c`` carries the hash tag ``{c}`` so that, on a Redis Cluster,
all of them live in one slot and a request applies atomically in one function call. A
bucket of a bucketed collection (``core/buckets.py``) is a storage unit of its own, with
keys like a collection's under a hash tag of its own (:func:`unit_tag`).
"""

from __future__ import annotations

import dataclasses
import functools
import json

from redis.crc import REDIS_CLUSTER_HASH_SLOTS, key_slot

from collection_manager.core.buckets import MAX_BUCKETS, split_unit, unit_names

CATALOG = "cm:catalog"
# Hash of a consumer's own metrics per topic: batches, dead letters, last batch, progress,
# health. Per topic, so consumers of different topics in one Redis keep their own.
CONSUMER_PREFIX = "cm:consumer:"


def consumer_key(topic: str) -> str:
    """The hash of the metrics of the consumer of ``topic``."""
    return CONSUMER_PREFIX + topic


# The keys a collection function of the library is given, in order (its keys[1], keys[2],
# ...): names of ``CollectionKeys`` properties; collection.lua gets them generated.
FUNCTION_KEYS = (
    "contents",
    "log",
    "time",
    "fences",
    "applied",
    "stats",
    "validity",
    "schedule",
    "expiration",
    "refused",
    "expiries",
    "pending",
    "bound",
    "parts",
    "migration_guard",
)
# The fields of a change-log entry: JSON arrays of its rows and of their diffs, and the
# wall clock of the function call that wrote it (Redis's TIME, ms since the Unix epoch;
# absent from entries an older library wrote). The clock serves `collections tail --since
# 5m` only: a collection's time stays its own count of request groups.
LOG_ROWS_FIELD = "r"
LOG_DIFFS_FIELD = "d"
LOG_CLOCK_FIELD = "ms"


def watermark_field(topic: str, partition: int) -> str:
    """The field of a collection's ``applied`` hash that holds ``(topic, partition)``'s."""
    return f"{topic}:{partition}"


def watermark_topic(field: str) -> str:
    """The topic of a ``watermark_field``."""
    return field.rpartition(":")[0]


def _spread(index: int) -> float:
    """The van der Corput point of ``index`` in [0, 1): 0, 1/2, 1/4, 3/4, 1/8, ... Any first
    N of them are spread evenly (within a factor of two of 1/N apart)."""
    point, scale = 0.0, 0.5
    while index:
        point += scale * (index & 1)
        index >>= 1
        scale /= 2
    return point


@functools.lru_cache(maxsize=4096)
def unit_tag(unit: str) -> str:
    """The hash tag of a storage unit's keys: the unit's name for an unbucketed collection;
    for a bucket, its name and the first salt that puts it in its own stretch of slots.

    A Redis Cluster gives each primary a contiguous range of slots. Bucket ``b``'s slot is
    sought in the stretch at the ``b``-th van der Corput point (shifted by the collection's
    own slot, so that collections do not all start on one node), ``16384 / MAX_BUCKETS``
    slots wide: the buckets of a collection land as evenly over the primaries as their
    count allows, where plain ``{c#b}`` tags put 8 of 16 on one of three primaries.
    """
    collection, bucket = split_unit(unit)
    if bucket is None:
        return unit
    width = REDIS_CLUSTER_HASH_SLOTS // MAX_BUCKETS
    shift = key_slot(collection.encode()) / REDIS_CLUSTER_HASH_SLOTS
    start = int(((_spread(bucket) + shift) % 1.0) * REDIS_CLUSTER_HASH_SLOTS)
    salt = 0
    while True:  # about MAX_BUCKETS tries on average
        tag = f"{unit}.{salt}"
        if (key_slot(tag.encode()) - start) % REDIS_CLUSTER_HASH_SLOTS < width:
            return tag
        salt += 1


def catalog_units(name: str, record: bytes | str) -> list[str]:
    """The storage units of a catalog entry: the collection, or each of its buckets."""
    try:
        buckets = int(json.loads(record).get("buckets", 1))
    except (ValueError, AttributeError, TypeError):
        buckets = 1  # not a definition this version reads: at most its own keys exist
    return unit_names(name, buckets)


def cut_key(collection: str) -> str:
    """Hash of a bucketed collection's settled cut (``storage/cut.py``): field ``<bucket>``
    -> the bucket's time in it, field ``x:<group>`` -> a group given up as incomplete."""
    return f"cm:{{{collection}}}:cut"


@dataclasses.dataclass(frozen=True)
class CollectionKeys:
    """The keys of one storage unit: a collection, or one bucket of one (``c#b``)."""

    collection: str

    @property
    def _base(self) -> str:
        return f"cm:{{{unit_tag(self.collection)}}}"

    @property
    def contents(self) -> str:
        """Hash: canonical row -> multiplicity (only non-zero ones)."""
        return f"{self._base}:contents"

    @property
    def log(self) -> str:
        """Stream of (row, diff), entry id ``<time>-<seq>``: the change log."""
        return f"{self._base}:log"

    @property
    def time(self) -> str:
        """The latest readable time: the time of the last applied request (upper - 1).

        Times start at 1, so 0 is the time of the empty collection and every change-log
        entry id ``<time>-<seq>`` is valid (a stream id must exceed 0-0).
        """
        return f"{self._base}:time"

    @property
    def fences(self) -> str:
        """Hash: replica id -> highest dead epoch."""
        return f"{self._base}:fences"

    @property
    def applied(self) -> str:
        """Hash: ``topic:partition`` -> highest applied Kafka offset."""
        return f"{self._base}:applied"

    @property
    def stats(self) -> str:
        """Hash of counters: one field per name in ``counters.COUNTERS``."""
        return f"{self._base}:stats"

    @property
    def validity(self) -> str:
        """Hash: row -> JSON ``{valid_until: diff}`` of its pending retractions (the ledger)."""
        return f"{self._base}:validity"

    @property
    def schedule(self) -> str:
        """Sorted set of ``valid_until|row`` by ``valid_until``: retractions kept ready."""
        return f"{self._base}:schedule"

    @property
    def expiration(self) -> str:
        """The expiration (ms): retractions at or after it are not scheduled."""
        return f"{self._base}:expiration"

    @property
    def refused(self) -> str:
        """Hash ``topic:partition:offset`` -> why: appends refused and not dead-lettered yet.

        Written in the same call that refuses (and passes the watermark over) the append,
        so the refusal is recorded exactly once; the consumer publishes its dead letter and
        then deletes the field.
        """
        return f"{self._base}:refused"

    @property
    def expiries(self) -> str:
        """Sorted set: row -> when its TTL expires (ms), one entry per row
        (docs/concepts/ttl-and-expiration.md).

        An append with a TTL replaces the entry of each row it names; the entry goes when
        the row leaves the collection (its multiplicity reaches zero).
        """
        return f"{self._base}:expiries"

    @property
    def pending(self) -> str:
        """Hash: the delete in progress, one too large for one function call
        (docs/concepts/deletes.md).

        Fields: ``query`` (the delete's JSON: index keys ``x``, residual ``f``, whole filter
        ``w``), ``time`` (the time it retracts at, not yet readable), ``key`` and ``cursor``
        (where its scan stands), ``seq`` (its next change-log sequence). While it exists,
        writes finish it first and reads leave out the rows it matches.
        """
        return f"{self._base}:pending"

    @property
    def bound(self) -> str:
        """An upper bound on every row's |multiplicity| (absent: unknown, or no rows yet).

        Raised by the call that writes a larger one, never lowered. While it plus the
        |diffs| of an apply stays within the numeric domain, no row can leave the domain,
        and the apply skips reading each row's multiplicity first. A collection written
        before this key existed has none until it is empty: its applies read every row.
        """
        return f"{self._base}:bound"

    @property
    def parts(self) -> str:
        """Sorted set of the parts of grouped requests applied here (a bucket of a bucketed
        collection): member ``<group>|<parts>|<applied at, ms>``, score the time it took.

        Written in the call that applies the part, so a reader learns exactly which groups
        this bucket holds at each time (``core/cut.py``); trimmed once the settled cut has
        passed them (``storage/cut.py``).
        """
        return f"{self._base}:parts"

    @property
    def migration_guard(self) -> str:
        """A key never written, declared to every collection function (Redis Cluster).

        The functions also touch index sets they do not declare. While the collection's
        slot migrates, a function must not run with some of those already moved: Redis
        runs a call in a migrating slot only when every declared key is on the node, and
        this one never is, so each call is answered TRYAGAIN (``library.call`` waits)
        until the slot has moved, and then runs whole on its new node.
        """
        return f"{self._base}:migration-guard"

    @property
    def dropping(self) -> str:
        """Hash: the drop in progress (``storage/drop.py``): ``ic`` (the indexed columns, as
        the functions' payload has them), ``cursor`` and ``run`` (where its scan stands).
        While it exists, the collection is being dropped and cannot be created again."""
        return f"{self._base}:dropping"

    @property
    def index_prefix(self) -> str:
        """Prefix of the secondary index sets, ``<prefix><column>:<value>`` -> rows."""
        return f"{self._base}:idx:"

    def index(self, column: str, value: str) -> str:
        """The set of rows whose ``column`` holds ``value``."""
        return f"{self.index_prefix}{column}:{value}"

    def function_keys(self) -> list[str]:
        """The keys a collection function is given, in ``FUNCTION_KEYS`` order."""
        return [getattr(self, name) for name in FUNCTION_KEYS]
