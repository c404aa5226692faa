"""What the consumer saw of each replica: the control requests, newest epoch wins.

The controller renews leases from this record (a heartbeat travels through Kafka like any
request, so a replica that can reach Kafka is alive) and shows it in ``replicas``.
Recording is idempotent: a replayed control request changes nothing.

Only epochs the controller issued reach the record (the consumer dead-letters the rest,
``core/epochs.py``). A record kept from before that check, with an epoch above the highest
issued, would hide every later sighting of the replica and so stop the leases of its real
incarnations from renewing: the next sighting replaces it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence

import redis

from collection_manager.core.requests import Heartbeat, ReplicaAdded, ReplicaRemoved, Request

SEEN = "cm:replicas:seen"

# Keep the newer record: a higher epoch, or the same epoch at a later offset position. A
# kept record above ARGV[3], the highest issued epoch (when given), was never issued: the
# new sighting replaces it. (Lua compares as doubles: exact for every epoch ever issued.)
_RECORD = """
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old then
  local o = cjson.decode(old)
  local n = cjson.decode(ARGV[2])
  local issued = tonumber(ARGV[3])
  local forged = issued ~= nil and o.epoch > issued
  if not forged and (o.epoch > n.epoch or (o.epoch == n.epoch and o.seq >= n.seq)) then
    return 0
  end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
return 1
"""


@dataclasses.dataclass(frozen=True)
class ReplicaSighting:
    """The latest control request of one replica.

    Attributes:
        replica_id: the replica.
        epoch: its incarnation.
        kind: ``added``, ``removed`` or ``heartbeat``.
        sent_at: the agent's clock when it sent a heartbeat (ms), if known.
        seen_at: the consumer's clock when it applied the request (ms).
        seq: ``(partition, offset)`` folded into one increasing number per partition.
    """

    replica_id: str
    epoch: int
    kind: str
    sent_at: int | None
    seen_at: int
    seq: int


_KINDS = {ReplicaAdded: "added", ReplicaRemoved: "removed", Heartbeat: "heartbeat"}


def sightings(requests: Sequence[tuple[int, Request]], seen_at: int) -> list[ReplicaSighting]:
    """The sightings of a partition's control requests (offset order)."""
    out = []
    for offset, request in requests:
        if isinstance(request, ReplicaAdded | ReplicaRemoved | Heartbeat):
            sent_at = request.sent_at if isinstance(request, Heartbeat) else None
            kind = _KINDS[type(request)]
            out.append(
                ReplicaSighting(request.replica_id, request.epoch, kind, sent_at, seen_at, offset)
            )
    return out


class ReplicaRecord:
    """The sightings in Redis."""

    def __init__(self, client: redis.Redis) -> None:
        self._client = client
        self._record = client.register_script(_RECORD)

    def record(
        self, seen: Sequence[ReplicaSighting], issued: Mapping[str, int] | None = None
    ) -> None:
        """Keeps each sighting unless a newer one of the replica is already kept.

        Args:
            seen: the sightings, in offset order.
            issued: replica id -> highest issued epoch; a kept record above it is replaced.
        """
        issued = issued or {}
        for sighting in seen:
            ceiling = issued.get(sighting.replica_id)
            record = json.dumps(dataclasses.asdict(sighting))
            args = [sighting.replica_id, record, "" if ceiling is None else ceiling]
            self._record(keys=[SEEN], args=args)

    def all(self) -> dict[str, ReplicaSighting]:
        """The latest sighting of every replica."""
        raw = self._client.hgetall(SEEN)
        return {
            (k.decode() if isinstance(k, bytes) else k): ReplicaSighting(**json.loads(v))
            for k, v in raw.items()
        }
