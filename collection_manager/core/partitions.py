"""Which Kafka partition each bucket's requests go to (docs/concepts/buckets.md, "Partitions").

Kafka's default partitioner hashes a message's key, and hashes of a few dozen keys are far
from even: the 16 buckets of one collection on a topic of 16 partitions landed on 10 of
them, 5 on one, so a third of the topic applied nothing of it while one partition applied
five buckets. So a bucketed collection is given a partition per bucket *by rule* when it
is created (:func:`assign`), recorded in its catalog entry with the topic's partition
count, and every writer produces each bucket's requests to its partition explicitly.

The rule: bucket ``b`` goes to partition ``(start + b) mod P``, where ``start`` is CRC-32
of the collection's name mod ``P``. ``N`` buckets on ``P >= N`` partitions use ``N``
distinct partitions; ``N > P`` gives every partition ``floor(N/P)`` or ``ceil(N/P)``
buckets. The start spreads several collections over the topic, rather than piling every
collection's bucket 0 on partition 0.

The assignment is fixed for the life of the collection: all of a bucket's requests must
reach one partition, since the consumer applies a storage unit's requests in the order
of each partition, not across partitions. A collection created before assignments has
none and keeps the key's hash (:class:`Partitioning` None on its spec), so an upgrade
moves no bucket to another partition. Pure.
"""

from __future__ import annotations

import dataclasses
import zlib

from collection_manager.core.errors import SchemaError

# Kafka sets no such limit; a bound keeps a damaged catalog record from passing as one.
MAX_PARTITIONS = 100_000


@dataclasses.dataclass(frozen=True)
class Partitioning:
    """Where a bucketed collection's requests go: each of bucket ``b``'s to partition
    ``assigned[b]`` of ``topic``.

    Attributes:
        topic: the request topic its partitions were read from when it was created.
        partitions: how many partitions the topic had then.
        assigned: each bucket's partition, bucket 0 first.

    Raises:
        SchemaError: for a partition count outside 1 to ``MAX_PARTITIONS``, or an assigned
            partition that is not one of the topic's.
    """

    topic: str
    partitions: int
    assigned: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "assigned", tuple(self.assigned))
        if not isinstance(self.topic, str) or not self.topic:
            raise SchemaError(f"a partition assignment names its topic, not {self.topic!r}")
        if _not_count(self.partitions, 1, MAX_PARTITIONS):
            raise SchemaError(
                f"a topic of {self.partitions!r} partitions: a partition assignment is over "
                f"1 to {MAX_PARTITIONS} partitions (MAX_PARTITIONS)"
            )
        for partition in self.assigned:
            if _not_count(partition, 0, self.partitions - 1):
                raise SchemaError(
                    f"partition {partition!r} is not one of the {self.partitions} of topic "
                    f"{self.topic} (0 to {self.partitions - 1})"
                )

    def partition(self, bucket: int) -> int:
        """The partition of ``bucket``'s requests."""
        return self.assigned[bucket]

    @property
    def shared(self) -> bool:
        """Whether some buckets share a partition: the topic had fewer partitions than
        the collection has buckets, so those buckets are applied one after the other."""
        return self.partitions < len(self.assigned)

    def text(self) -> str:
        """In words, for tables: ``16 partitions of cm.requests, each bucket its own``."""
        spread = "each bucket its own"
        if self.shared:
            low, high = divmod(len(self.assigned), self.partitions)
            spread = f"fewer than its {len(self.assigned)} buckets: {low}"
            spread += f" or {low + 1} buckets a partition" if high else " buckets a partition"
        return f"{self.partitions} partitions of {self.topic}, {spread}"


def _not_count(value: object, low: int, high: int) -> bool:
    return isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high


def assign(collection: str, buckets: int, partitions: int, topic: str) -> Partitioning:
    """The partitions of a new collection's ``buckets`` on ``topic`` of ``partitions``
    partitions, by the rule (module docstring).

    Raises:
        SchemaError: for a partition count outside 1 to ``MAX_PARTITIONS``.
    """
    if _not_count(partitions, 1, MAX_PARTITIONS):
        raise SchemaError(
            f"topic {topic} has {partitions!r} partitions; buckets are assigned over 1 to "
            f"{MAX_PARTITIONS} (MAX_PARTITIONS)"
        )
    start = zlib.crc32(collection.encode("utf-8")) % partitions
    return Partitioning(topic, partitions, tuple((start + b) % partitions for b in range(buckets)))
