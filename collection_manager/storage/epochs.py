"""The controller's epoch records: where they live, and reading the authority from them.

The controller (``control/members.py``) issues epochs from the namespace's sequence and
records each replica's range in the ``issued`` hash (``storage/replica_keys.py``, the one
definition of these keys for both); the consumer only reads them here and refuses what
``core/epochs.py`` says.
"""

from __future__ import annotations

import json
from collections.abc import Collection

import redis

from collection_manager.core.epochs import EpochAuthority, Issued
from collection_manager.storage.replica_keys import ReplicaKeys


def epoch_key(namespace: str, replica_id: str) -> str:
    """The counter of ``replica_id``'s epochs as older versions kept it (``cm:replicas``)."""
    return ReplicaKeys(namespace).epoch(replica_id)


def parse_issued(raw: bytes | str) -> Issued:
    """One field of the ``issued`` hash."""
    fields = json.loads(raw)
    return Issued(int(fields["highest"]), int(fields["floor"]))


class IssuedEpochs:
    """Reads what the controller issued.

    Args:
        client: a Redis client.
        namespace: the controller's key namespace (``CM_REPLICA_NAMESPACE``).
    """

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self._client = client
        self.namespace = namespace
        self._keys = ReplicaKeys(namespace)

    def authority(self, replica_ids: Collection[str]) -> EpochAuthority:
        """The authority for ``replica_ids``, in one round trip (one per node of a
        cluster): their ``issued`` fields, the namespace's collected epoch, and the
        counters of older versions for replicas issued nothing since."""
        ids = sorted(replica_ids)
        pipe = self._client.pipeline(transaction=False)
        pipe.get(self._keys.collected)
        if ids:
            pipe.hmget(self._keys.issued, ids)
            for replica_id in ids:
                pipe.get(self._keys.epoch(replica_id))
        collected, *rest = pipe.execute()
        issued: dict[str, Issued] = {}
        if ids:
            records, legacy = rest[0], rest[1:]
            for replica_id, record, counter in zip(ids, records, legacy, strict=True):
                if record is not None:
                    issued[replica_id] = parse_issued(record)
                elif counter is not None:
                    issued[replica_id] = Issued(int(counter))
        return EpochAuthority(issued, int(collected or 0))
