"""What the consumer saw of each replica, and how far it applied the log, per namespace.

Two records under the namespace's keys (``ReplicaKeys`` in ``storage/replica_keys.py``):

- *sightings*: each replica's latest control request, newest epoch wins. The controller
  renews leases from them and shows them in ``replicas list``.
- *log times*: per ``topic:partition``, the time of the newest controller tick applied
  there (``core/ticks.py``). Leases are measured in it (docs/concepts/leases-and-retention.md).

Both are written in one script call after a partition chunk is applied, so a controller that
reads both at once (``snapshot``) never sees a tick without the heartbeats before it.
Recording is idempotent: a replayed control request or tick changes nothing.

Only epochs the controller issued reach the record (the consumer dead-letters the rest,
``core/epochs.py``). A record kept from before that check, with an epoch above the highest
issued, would hide every later sighting of the replica and so stop the leases of its real
incarnations from renewing: the next sighting replaces it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Mapping, Sequence

import redis

from collection_manager.core.requests import Heartbeat, ReplicaAdded, ReplicaRemoved, Request
from collection_manager.core.ticks import is_tick, newest_tick
from collection_manager.storage.client import is_cluster_node
from collection_manager.storage.keys import watermark_field
from collection_manager.storage.replica_keys import ReplicaKeys

# KEYS: seen, log times. ARGV: the log-time field, the newest tick time ("" for none), then
# (replica id, record, highest issued epoch or "") per sighting. A sighting is kept unless
# the kept one is newer: a higher epoch, or the same epoch at a later offset. A kept record
# above the highest issued epoch was never issued: the new one replaces it. The log time only
# moves forward. (Lua compares as doubles: exact for every epoch and ms time in use.)
_RECORD = """
for i = 3, #ARGV, 3 do
  local keep = false
  local old = redis.call('HGET', KEYS[1], ARGV[i])
  if old then
    local o = cjson.decode(old)
    local n = cjson.decode(ARGV[i + 1])
    local issued = tonumber(ARGV[i + 2])
    local forged = issued ~= nil and o.epoch > issued
    keep = not forged and (o.epoch > n.epoch or (o.epoch == n.epoch and o.seq >= n.seq))
  end
  if not keep then
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
local tick = tonumber(ARGV[2])
if tick ~= nil then
  local now = tonumber(redis.call('HGET', KEYS[2], ARGV[1]))
  if now == nil or tick > now then
    redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
  end
end
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
        seen_at: the consumer's clock when it applied the request (ms; shown, decides
            nothing).
        seq: its offset in its partition.
        partition: the partition that carries the replica's control requests (-1: unknown,
            a record written before partitions were recorded).
    """

    replica_id: str
    epoch: int
    kind: str
    sent_at: int | None
    seen_at: int
    seq: int
    partition: int = -1


@dataclasses.dataclass(frozen=True)
class ReplicaSnapshot:
    """The sightings and log times of one topic, read at one instant.

    Attributes:
        sightings: replica id -> latest sighting.
        log_times: partition -> log time (ms), for partitions where a tick was applied.
    """

    sightings: dict[str, ReplicaSighting]
    log_times: dict[int, int]


_KINDS = {ReplicaAdded: "added", ReplicaRemoved: "removed", Heartbeat: "heartbeat"}


def sightings(
    requests: Sequence[tuple[int, Request]], seen_at: int, partition: int = -1
) -> list[ReplicaSighting]:
    """The sightings of a partition's control requests (offset order); ticks are none."""
    out = []
    for offset, request in requests:
        if isinstance(request, ReplicaAdded | ReplicaRemoved | Heartbeat) and not is_tick(request):
            sent_at = request.sent_at if isinstance(request, Heartbeat) else None
            kind = _KINDS[type(request)]
            out.append(
                ReplicaSighting(
                    request.replica_id, request.epoch, kind, sent_at, seen_at, offset, partition
                )
            )
    return out


class ReplicaRecord:
    """The sightings and log times of one namespace in Redis.

    Args:
        client: a Redis client.
        namespace: the replica namespace (``CM_REPLICA_NAMESPACE``).
    """

    def __init__(self, client: redis.Redis, namespace: str = "cm:replicas") -> None:
        self._client = client
        self.keys = ReplicaKeys(namespace)
        self._record = client.register_script(_RECORD)
        self._adopt_untagged()

    def _adopt_untagged(self) -> None:
        """Renames the records of a Redis written before their hash tag (RENAMENX: never
        over newer records). A cluster never held them untagged: it could not."""
        if is_cluster_node(self._client):
            return
        for old, new in self.keys.untagged().items():
            with contextlib.suppress(redis.ResponseError):  # no such key: nothing to adopt
                self._client.renamenx(old, new)

    def record(
        self,
        topic: str,
        partition: int,
        requests: Sequence[tuple[int, Request]],
        seen_at: int,
        issued: Mapping[str, int] | None = None,
    ) -> None:
        """Records a partition chunk's applied control requests: sightings and log time.

        Args:
            topic: the topic of the chunk.
            partition: its partition.
            requests: its applied requests, in offset order (others than control ignored).
            seen_at: the consumer's clock (ms), shown with the sightings.
            issued: replica id -> highest issued epoch; a kept record above it is replaced.
        """
        issued = issued or {}
        seen = sightings(requests, seen_at, partition)
        tick = newest_tick(r for _, r in requests)
        if not seen and tick is None:
            return
        args: list[str | int] = [watermark_field(topic, partition), "" if tick is None else tick]
        for sighting in seen:
            ceiling = issued.get(sighting.replica_id)
            record = json.dumps(dataclasses.asdict(sighting))
            args += [sighting.replica_id, record, "" if ceiling is None else ceiling]
        self._record(keys=[self.keys.seen, self.keys.log_times], args=args)

    def all(self) -> dict[str, ReplicaSighting]:
        """The latest sighting of every replica."""
        return _sightings(self._client.hgetall(self.keys.seen))

    def snapshot(self, topic: str) -> ReplicaSnapshot:
        """The sightings and ``topic``'s log times, read in one transaction."""
        pipe = self._client.pipeline(transaction=True)
        pipe.hgetall(self.keys.seen)
        pipe.hgetall(self.keys.log_times)
        seen, times = pipe.execute()
        prefix = f"{topic}:"
        log_times = {
            int(field[len(prefix) :]): int(value)
            for field, value in ((_text(k), v) for k, v in times.items())
            if field.startswith(prefix)
        }
        return ReplicaSnapshot(_sightings(seen), log_times)


def _sightings(raw: Mapping[bytes | str, bytes | str]) -> dict[str, ReplicaSighting]:
    return {_text(k): ReplicaSighting(**json.loads(v)) for k, v in raw.items()}


def _text(value: bytes | str) -> str:
    return value.decode() if isinstance(value, bytes) else value
