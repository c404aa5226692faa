"""The consumer's settling of bucketed collections' cuts (docs/concepts/buckets.md#the-cut):
on the retraction timer's rounds, each bucketed collection its topic writes has its cut
settled by ``storage/cut.py``, and a request group still incomplete past the delivery
timeout is given up."""

from __future__ import annotations

import logging
from collections.abc import Collection

from collection_manager.core.errors import UnknownCollectionError
from collection_manager.storage.client import REDIS_FAULTS
from collection_manager.storage.cut import SettleResult
from collection_manager.storage.replication import Durability
from collection_manager.storage.writes import StoreWriter

logger = logging.getLogger(__name__)

# How long a producer may take to deliver a message: librdkafka's message.timeout.ms,
# which every producer of the project keeps at its default. A group of parts sent to
# several buckets, still incomplete that long after its first part was applied (by the TTL
# clock), lost a part for good and is given up (core/cut.py).
GROUP_DELIVERY_MS = 300_000


def settle_cuts(
    writer: StoreWriter,
    timed: Collection[str],
    ttl_clock_ms: int | None,
    durability: Durability | None = None,
) -> list[SettleResult]:
    """Settles the cut of each bucketed collection with a storage unit in ``timed`` (those
    the consumer's topic writes); what each settling did.

    ``ttl_clock_ms``: the consumer's TTL clock; 0 or None gives up no group (the consumer
    may be behind).
    """
    results = []
    for spec in writer.catalog.specs().values():
        if spec.buckets == 1 or not any(u.name in timed for u in spec.units()):
            continue
        clock = ttl_clock_ms or 0
        try:
            results.append(writer.settle_cut(spec.name, clock, GROUP_DELIVERY_MS, durability))
        except UnknownCollectionError:
            continue  # dropped since it was listed
        except REDIS_FAULTS as exc:
            # Not urgent: readers compute the cut themselves; the next round settles.
            logger.info("settling the cut of %s waits: %s", spec.name, exc)
    return results
