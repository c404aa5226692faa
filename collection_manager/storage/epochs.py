"""The controller's epoch counters: where they live, and reading the highest issued.

``<namespace>:epoch:<replica_id>`` is advanced with ``INCR`` by the controller
(``control/members.py``) and only read here, by the consumer, which refuses epochs above
it (``core/epochs.py``). The key is defined once, in ``storage/keys.py``, for both.
"""

from __future__ import annotations

from collections.abc import Collection

import redis

from collection_manager.storage.keys import ReplicaKeys


def epoch_key(namespace: str, replica_id: str) -> str:
    """The counter of ``replica_id``'s epochs under ``namespace`` (e.g. ``cm:replicas``)."""
    return ReplicaKeys(namespace).epoch(replica_id)


class IssuedEpochs:
    """Reads the highest epoch the controller issued per replica.

    Args:
        client: a Redis client.
        namespace: the controller's key namespace (``CM_REPLICA_NAMESPACE``).
    """

    def __init__(self, client: redis.Redis, namespace: str) -> None:
        self._client = client
        self.namespace = namespace

    def highest(self, replica_ids: Collection[str]) -> dict[str, int]:
        """Replica id -> highest issued epoch, in one round trip (one per node of a
        cluster: the counters are independent keys); those with none left out."""
        ids = sorted(replica_ids)
        if not ids:
            return {}
        pipe = self._client.pipeline(transaction=False)
        for replica_id in ids:
            pipe.get(epoch_key(self.namespace, replica_id))
        values = pipe.execute()
        return {r: int(v) for r, v in zip(ids, values, strict=True) if v is not None}
