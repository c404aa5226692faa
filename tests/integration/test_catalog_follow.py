"""A running consumer follows a collection dropped and created again with other buckets
(docs/howto/buckets.md, Changing N): its executors' store reads the catalog at every
micro-batch (``RedisStore.specs``), so no restart is needed; and a raw producer's
``collection_spec`` reads the catalog's definition with its buckets."""

from __future__ import annotations

import redis as redis_lib

from collection_manager import devservices
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from producers.routing import collection_spec

SCHEMA = {
    "type": "record",
    "name": "follow",
    "fields": [{"name": "replica_id", "type": "string"}, {"name": "n", "type": "long"}],
}


def test_a_long_lived_store_sees_a_collection_created_again_with_other_buckets(
    redis: redis_lib.Redis, endpoints: devservices.Endpoints, unique: str
) -> None:
    name = f"follow-{unique}"
    executor, operator = RedisStore(redis), RedisStore(redis)  # the consumer's; the CLI's
    operator.create_collection(CollectionSpec(name, SCHEMA, ("replica_id",), buckets=2))
    try:
        assert executor.specs()[name].buckets == 2
        operator.drop_collection(name)
        operator.create_collection(CollectionSpec(name, SCHEMA, ("replica_id",), buckets=8))
        assert executor.specs()[name].buckets == 8
        assert collection_spec(name, endpoints.redis_url).buckets == 8
    finally:
        operator.drop_collection(name)
