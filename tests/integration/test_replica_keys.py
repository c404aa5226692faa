"""Sightings and log times share a hash slot (``{<namespace>}``), and a Redis written
before they had it keeps its records: they are renamed, never overwritten."""

from __future__ import annotations

import redis as redis_lib
from redis.crc import key_slot

from collection_manager.storage.replica_keys import ReplicaKeys
from collection_manager.storage.replicas import ReplicaRecord


def test_sightings_and_log_times_share_one_slot() -> None:
    keys = ReplicaKeys("cm:replicas-x")
    assert keys.seen == "{cm:replicas-x}:seen"
    assert key_slot(keys.seen.encode()) == key_slot(keys.log_times.encode())


def test_records_from_before_the_hash_tag_are_adopted_once(
    redis: redis_lib.Redis, unique: str
) -> None:
    namespace = f"cm:replicas-{unique}"
    keys = ReplicaKeys(namespace)
    redis.hset(f"{namespace}:seen", "r1", '{"old": 1}')
    redis.hset(f"{namespace}:log-time", "t:0", 41)
    ReplicaRecord(redis, namespace)
    assert redis.hgetall(keys.seen) == {b"r1": b'{"old": 1}'}
    assert redis.hgetall(keys.log_times) == {b"t:0": b"41"}
    assert not redis.exists(f"{namespace}:seen", f"{namespace}:log-time")

    # A stale untagged record (an old consumer still running) never replaces a newer one.
    redis.hset(f"{namespace}:log-time", "t:0", 7)
    ReplicaRecord(redis, namespace)
    assert redis.hget(keys.log_times, "t:0") == b"41"
    redis.delete(keys.seen, keys.log_times, f"{namespace}:log-time")
