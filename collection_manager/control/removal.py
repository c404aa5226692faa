"""What removing a replica sends, which replicas a lease check removes, and what a removed
replica's retention deletes (docs/concepts/epochs-and-fences.md,
docs/concepts/leases-and-retention.md).

- :func:`fenced_deletes`: the fenced ``Delete`` of a replica's rows from each replica
  collection, routed by the catalog's buckets as they are now: keyed by the collection, so it
  lands in order with that collection's appends; in a collection bucketed by ``replica_id``,
  keyed by the one bucket that holds the replica's rows, and produced to that bucket's
  partition when the buckets were assigned partitions, in order with its appends there;
  bucketed by another column, one part per bucket, each to its bucket's partition;
- :func:`remove_expired`: the removal of the replicas whose lease expired, one failure not
  skipping the others;
- :func:`collect_removed`: the deletion of the control state (member record, issued epochs,
  fences) of replicas removed longer than the retention ago.

The controller (``controller.py``) calls these under its lock; the membership change itself
(``begin_removal``/``finish_removal``) stays there.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

import redis

from collection_manager.control import metrics
from collection_manager.control.errors import CONTROLLER_FAULTS
from collection_manager.control.leases import Lease
from collection_manager.control.members import REMOVED, Member, MemberRecord
from collection_manager.control.publishing import Placed
from collection_manager.core.fences import Fence
from collection_manager.core.filters import eq
from collection_manager.core.requests import Delete
from collection_manager.core.routing import partition_of, route_delete
from collection_manager.storage.declared import DeclaredCollections
from collection_manager.storage.keys import CollectionKeys
from schemas.introspection import REPLICA_COLUMN

# The controller's logger, not this module's: its records keep the one name that the demo
# quiets (a lease it lets expire is narrated instead) and that log configurations filter by.
logger = logging.getLogger("collection_manager.control.controller")


def fenced_deletes(
    declared: DeclaredCollections,
    names: Sequence[str],
    replica_id: str,
    reason: str,
    fence: Fence,
) -> list[Placed]:
    """The deletes that retract ``replica_id``'s rows from each replica collection of
    ``names``, routed by the catalog's buckets as they are now (read per removal: a
    collection dropped and created again with other buckets is routed as it is now), each
    with its bucket's partition where the buckets were assigned partitions, as the agents'
    appends there. One the catalog lacks gets an unbucketed delete, as before buckets (a
    dead letter naming the unknown collection)."""
    specs = declared.catalog_specs(names)
    deletes: list[Placed] = []
    for name in names:
        delete = Delete(name, eq(REPLICA_COLUMN, replica_id), reason, fence)
        spec = specs.get(name)
        routed = [delete] if spec is None else route_delete(delete, spec)
        deletes.extend((part, partition_of(part, spec)) for part in routed)
    return deletes


def replica_units(declared: DeclaredCollections, names: Sequence[str]) -> list[str]:
    """The storage units of the replica collections ``names``: where fences live (a
    bucketed collection's in each bucket its fenced deletes reached)."""
    specs = declared.catalog_specs(names)
    units: list[str] = []
    for name in names:
        spec = specs.get(name)
        units.extend([name] if spec is None else [unit.name for unit in spec.units()])
    return units


def remove_expired(
    expired: Iterable[Lease], remove: Callable[[str, str, int], int | None], ttl_ms: int
) -> list[str]:
    """Removes the replica of each of the ``expired`` leases with ``remove`` (the
    controller's ``remove_replica``: id, reason, epoch); returns the ones removed."""
    removed = []
    reason = f"lease expired (no heartbeat for {ttl_ms} ms of log time)"
    for lease in expired:
        # One failure must not skip the other expired replicas: a failed removal left
        # its member ``removing`` (retried by the next check) or ``active`` (re-leased).
        try:
            if remove(lease.replica_id, reason, lease.epoch) is not None:
                metrics.EXPIRIES.inc()
                logger.warning("replica %s epoch %d: %s", lease.replica_id, lease.epoch, reason)
                removed.append(lease.replica_id)
        except CONTROLLER_FAULTS as exc:
            logger.error("removing %s failed, will retry: %s", lease.replica_id, exc)
    return removed


def collect_removed(
    records: MemberRecord,
    client: redis.Redis,
    members: Iterable[Member],
    due: int,
    units: Callable[[], list[str]],
) -> None:
    """Deletes the control state of the ``members`` removed at ``due`` (ms) or before.

    The authority goes first (from then on the consumer refuses their requests), the
    fences after, in each of ``units()`` (read per collected replica): a crash in between
    leaves the member record, and the next check finishes the collection.
    """
    for member in members:
        if member.state != REMOVED or (member.removed_at or 0) > due:
            continue
        if records.collect(member):
            fences = [CollectionKeys(unit).fences for unit in units()]
            pipe = client.pipeline(transaction=False)
            for key in fences:
                pipe.hdel(key, member.replica_id)
            pipe.execute()
            records.forget(member)
            metrics.COLLECTED.inc()
            logger.info("collected replica %s (epoch %d)", member.replica_id, member.epoch)
