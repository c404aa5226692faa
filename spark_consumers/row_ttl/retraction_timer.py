"""The driver's clock for temporal validity: due retractions and the expiration
(docs/concepts/ttl-and-expiration.md).

A consumer times only the collections its own topic wrote: another deployment's
collections on the same Redis follow their own consumer's clocks, and a row there must not
expire by this consumer's TTL clock while that deployment is behind or down
(docs/concepts/ttl-and-expiration.md).

Scheduled retractions are applied on a timer, not per micro-batch, so they happen also
when no input arrives. With an expiration offset, ``expiration = start + offset``: the
store schedules only retractions before it. When the clock reaches it, the timer does
what a restart would: it recomputes the expiration and rebuilds the schedule from the
stored ledger, before applying anything due, so the output never differs.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.storage.cut import SettleResult
from collection_manager.storage.replication import Durability
from collection_manager.storage.store import RedisStore
from collection_manager.storage.writes import StoreWriter
from spark_consumers.cut_settling import settle_cuts

# The name it logged under before it moved here: log filters and levels may name it.
logger = logging.getLogger("spark_consumers.retraction_timer")


_RETRACTED = ("scheduled_retractions", "expirations")


def _now_ms() -> int:
    return int(time.time() * 1000)


class RetractionTimer:
    """Applies due retractions in the collections of ``topic`` and keeps the expiration ahead.

    Args:
        store: the writer of the collections (or a ``RedisStore``, whose writer it takes).
        expiration_offset_ms: 0 for no expiration, else how far ahead it lies.
        topic: the consumer's request topic; collections no request of it was applied to
            are left to their own deployment's consumer.
        clock: milliseconds since the Unix epoch (a parameter so tests can drive it).
        durability: the consumer's replication barrier, which a settled cut waits for.
    """

    def __init__(
        self,
        store: StoreWriter | RedisStore,
        expiration_offset_ms: int,
        topic: str,
        clock: Callable[[], int] = _now_ms,
        durability: Durability | None = None,
    ) -> None:
        self.writer = store if isinstance(store, StoreWriter) else store.writer
        self.durability = durability
        self.offset = expiration_offset_ms
        self.topic = topic
        self.clock = clock
        self.expiration: int | None = None
        self.prepared: set[str] = set()

    def start(self) -> None:
        """Computes the expiration and rebuilds every collection's schedule for it."""
        now = self.clock()
        self.expiration = now + self.offset if self.offset else None
        self.prepared.clear()
        self._prepare_new()
        logger.info("expiration %s; schedules rebuilt", self.expiration or "off")

    def _prepare_new(self) -> None:
        # Collections created (or first written from this topic) after start get the
        # current expiration too. A bucketed collection's buckets are timed each on its own.
        for name in (unit.name for unit in self.writer.catalog.unit_specs()):
            if name not in self.prepared:
                try:
                    if not self.writer.written_from(name, self.topic):
                        continue
                    kept = self.writer.set_expiration(name, self.expiration)
                except UnknownCollectionError:
                    continue  # dropped since it was listed: a drop must not stop the consumer
                logger.debug("%s: %d future retractions scheduled", name, kept)
                self.prepared.add(name)

    def tick(self, ttl_clock_ms: int | None = None) -> int:
        """Applies what is due now; returns how many rows were retracted.

        ``ttl_clock_ms``: rows whose TTL expiry is at or before it go too (default: now;
        0: none). The consumer passes when its latest batch that read everything in Kafka
        began, or 0 while it is behind or meets an outage: a row's refresh may still wait in
        Kafka, and no row expires because the pipeline itself was down
        (docs/concepts/ttl-and-expiration.md).
        """
        now = self.clock()
        if self.expiration is not None and now >= self.expiration:
            logger.warning(
                "the clock reached the expiration %d: recomputing it and "
                "rebuilding the schedules, as a restart would",
                self.expiration,
            )
            self.start()
        self._prepare_new()
        return sum(
            sum(self.writer.retract_due(name, now, ttl_clock_ms).get(c, 0) for c in _RETRACTED)
            for name in sorted(self.prepared)
        )

    def settle_cuts(self, ttl_clock_ms: int | None) -> list[SettleResult]:
        """Settles the cut of each bucketed collection this topic writes
        (``spark_consumers/cut_settling.py``); as for :meth:`tick`, ``ttl_clock_ms`` 0 or
        None gives up no group."""
        return settle_cuts(self.writer, self.prepared, ttl_clock_ms, self.durability)
