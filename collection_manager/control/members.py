"""Replica membership in Redis: issued epochs, member records and persisted leases.

Keys, under a namespace (default ``cm:replicas``; every replica key is named by
``ReplicaKeys`` in ``storage/replica_keys.py``):

- ``{<ns>}:issued``: hash replica id -> the epochs it may claim, advanced atomically (a
  script) so two controllers never hand out the same epoch, and ``{<ns>}:collected``, the
  highest epoch of a collected incarnation (the consumer reads both to refuse epochs never
  issued and requests of collected incarnations, ``core/epochs.py``);
- ``<ns>:members``: hash replica id -> JSON :class:`Member`;
- ``<ns>:leases``: hash replica id -> JSON lease (epoch, expires_at, renewed_at, partition;
  in log time), written by the controller's lease loop so that other processes can show it.

State changes are computed by the pure transition functions below and written with an
optimistic transaction (``WATCH``), so a remove racing an add never overwrites it. A
removed replica's keys are deleted (*collected*) once its retention has passed.

With replicas (``Durability``, ``CM_REDIS_REPLICA_ACKS``), an issued epoch and a changed member
record return only once that many replicas of every primary hold them: nothing acts on a decision a
failover could roll back (an epoch handed out twice, a removed replica back as active:
docs/concepts/epochs-and-fences.md). The leases hash only shows the controller's table and gets no
barrier.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable

import redis

from collection_manager.control.leases import Lease
from collection_manager.storage.replica_keys import ReplicaKeys
from collection_manager.storage.replication import Durability

ACTIVE = "active"
REMOVING = "removing"
REMOVED = "removed"


@dataclasses.dataclass(frozen=True)
class Member:
    """One replica's current incarnation as the controller knows it.

    Attributes:
        replica_id: the replica.
        epoch: its latest incarnation.
        state: ``active``; ``removing`` (retractions being published: retried by the lease
            loop until done); ``removed``.
        added_at: when the incarnation was added (ms).
        removed_at: when its removal finished (ms), if it did.
        reason: why it was removed.
    """

    replica_id: str
    epoch: int
    state: str
    added_at: int
    removed_at: int | None = None
    reason: str = ""


def added(current: Member | None, new: Member) -> Member | None:
    """The record after adding ``new``; None (no write) when a newer epoch is recorded."""
    if current is not None and current.epoch > new.epoch:
        return None
    return new


def begin_removal(current: Member | None, epoch: int | None, reason: str) -> Member | None:
    """The record once a removal starts; None when there is nothing to remove.

    Args:
        current: the record.
        epoch: the incarnation to remove; None for whichever is current. A removal of an
            older epoch (a lease that expired while the replica was re-added) does nothing.
        reason: why.
    """
    if current is None or current.state == REMOVED:
        return None
    if epoch is not None and current.epoch != epoch:
        return None
    return dataclasses.replace(current, state=REMOVING, reason=reason)


def finish_removal(current: Member | None, epoch: int, now_ms: int) -> Member | None:
    """The record once ``epoch``'s retractions are published; None if it moved on."""
    if current is None or current.epoch != epoch or current.state != REMOVING:
        return None
    return dataclasses.replace(current, state=REMOVED, removed_at=now_ms)


# ``update``'s signal to delete the record (a removed member collected).
_FORGET = Member("", 0, REMOVED, 0)

# Issues the next epoch of a replica. A replica with no record (never added, or collected
# since) starts above every collected epoch, which becomes its floor; one with a record of
# an older version (its counter) starts above that too.
# KEYS: issued, collected. ARGV: replica id, its older counter (0: none).
_ISSUE = """
local record = redis.call('HGET', KEYS[1], ARGV[1])
local highest, floor
if record then
  local issued = cjson.decode(record)
  highest, floor = issued.highest, issued.floor
else
  floor = tonumber(redis.call('GET', KEYS[2]) or '0')
  highest = math.max(floor, tonumber(ARGV[2]))
end
local epoch = highest + 1
redis.call('HSET', KEYS[1], ARGV[1], string.format('{"highest":%d,"floor":%d}', epoch, floor))
return epoch
"""

# Collects a removed incarnation unless the replica was issued a newer epoch meanwhile.
# KEYS: issued, collected, seen. ARGV: replica id, the removed epoch.
_COLLECT = """
local record = redis.call('HGET', KEYS[1], ARGV[1])
local epoch = tonumber(ARGV[2])
if record and cjson.decode(record).highest ~= epoch then return 0 end
if epoch > tonumber(redis.call('GET', KEYS[2]) or '0') then
  redis.call('SET', KEYS[2], ARGV[2])
end
redis.call('HDEL', KEYS[1], ARGV[1])
redis.call('HDEL', KEYS[3], ARGV[1])
return 1
"""


class MemberRecord:
    """The membership keys in Redis.

    Args:
        client: a Redis client.
        namespace: prefix of the keys.
        durability: the replicas that must hold an epoch or a member change before it is
            acted on (none by default).
    """

    def __init__(
        self,
        client: redis.Redis,
        namespace: str = "cm:replicas",
        durability: Durability | None = None,
    ) -> None:
        self._client = client
        self._durability = durability or Durability()
        self.namespace = namespace
        self.keys = ReplicaKeys(namespace)
        self.members_key = self.keys.members
        self.leases_key = self.keys.leases
        # EVALSHA after the first call, as ReplicaRecord does: the text is sent once.
        self._issue = client.register_script(_ISSUE)
        self._collect = client.register_script(_COLLECT)

    def next_epoch(self, replica_id: str) -> int:
        """A new epoch of ``replica_id``, higher than every one handed out to it before
        and every collected one, recorded as its highest issued before anyone claims it."""
        legacy = self.keys.epoch(replica_id)
        counter = int(self._client.get(legacy) or 0)
        keys = [self.keys.issued, self.keys.collected]
        epoch = int(self._issue(keys=keys, args=[replica_id, counter]))
        if counter:
            self._client.delete(legacy)  # the issued record holds it from now on
        self._durability.confirm(
            self._client, f"epoch {epoch} of {replica_id} is used once they do"
        )
        return epoch

    def collect(self, member: Member) -> bool:
        """Deletes the issued epochs of a removed ``member`` (its requests are refused from
        now on, ``core/epochs.py``) and its sighting; ``forget`` deletes its record.

        Returns False, and deletes nothing, when it was re-added meanwhile.
        """
        keys = [self.keys.issued, self.keys.collected, self.keys.seen]
        if not self._collect(keys=keys, args=[member.replica_id, member.epoch]):
            return False
        self._client.delete(self.keys.epoch(member.replica_id))  # an older version's counter
        return True

    def forget(self, member: Member) -> None:
        """Deletes the record of ``member``, if it is still that one."""
        self.update(member.replica_id, lambda m: _FORGET if m == member else None)

    def get(self, replica_id: str) -> Member | None:
        """The record of ``replica_id``, if any."""
        raw = self._client.hget(self.members_key, replica_id)
        return None if raw is None else Member(**json.loads(raw))

    def all(self) -> dict[str, Member]:
        """Every record, by replica id."""
        raw = self._client.hgetall(self.members_key)
        return {_text(k): Member(**json.loads(v)) for k, v in raw.items()}

    def update(
        self, replica_id: str, change: Callable[[Member | None], Member | None]
    ) -> Member | None:
        """Applies ``change`` to the record atomically; returns what it wrote (or None).

        ``change`` returns the new record, None to leave it, or ``_FORGET`` to delete it.
        """

        written: list[Member | None] = []

        def transaction(pipe: redis.client.Pipeline) -> None:
            raw = pipe.hget(self.members_key, replica_id)
            new = change(None if raw is None else Member(**json.loads(raw)))
            pipe.multi()
            if new is _FORGET:
                pipe.hdel(self.members_key, replica_id)
                new = None
            elif new is not None:
                pipe.hset(self.members_key, replica_id, json.dumps(dataclasses.asdict(new)))
            # A retried transaction (the key changed under WATCH) starts over.
            written[:] = [new]

        self._client.transaction(transaction, self.members_key)
        if written[0] is not None:
            self._durability.confirm(
                self._client, f"{replica_id}'s change is acted on once they do"
            )
        return written[0]

    def save_leases(self, leases: list[Lease]) -> None:
        """Records leases granted or renewed, for ``replicas list`` to show."""
        if leases:
            mapping = {
                lease.replica_id: json.dumps(
                    {
                        "epoch": lease.epoch,
                        "expires_at": lease.expires_at,
                        "renewed_at": lease.renewed_at,
                        "partition": lease.partition,
                    }
                )
                for lease in leases
            }
            self._client.hset(self.leases_key, mapping=mapping)  # type: ignore[arg-type]

    def drop_lease(self, replica_id: str) -> None:
        """Forgets ``replica_id``'s lease (removed replicas hold none)."""
        self._client.hdel(self.leases_key, replica_id)

    def leases(self) -> dict[str, Lease]:
        """The recorded leases, by replica id."""
        raw = self._client.hgetall(self.leases_key)
        return {_text(k): Lease(_text(k), **json.loads(v)) for k, v in raw.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
