"""The cut in one round trip per node: a bucketed collection's cut (``storage/cut.read_cut``)
is read with one pipeline per Redis node, on the run's Redis (one node) and on a Redis
Cluster of three primaries, and is the very cut one call per bucket gives
(``bench/cut_reads.py``): with a group half applied (held back) and whole, read for rows
and for changes, after a settle, and while a bucket's slot moves to another primary. The
round trips are counted where the client writes to its sockets: two on one Redis, one more
per primary of a cluster, against 2 + N before.
"""

from __future__ import annotations

import itertools
import threading
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from redis.connection import AbstractConnection
from redis.crc import key_slot

from bench.cut_reads import per_bucket_cut
from collection_manager.core.buckets import bucket_of
from collection_manager.core.cut import Cut
from collection_manager.core.requests import Append
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.redis_cluster import LocalRedisCluster, start_cluster
from collection_manager.storage.client import redis_client
from collection_manager.storage.cut import read_cut
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.library import install
from collection_manager.storage.store import RedisStore

SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [{"name": "replica_id", "type": "string"}, {"name": "worker_id", "type": "long"}],
}
BUCKETS = 16


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    found = start_cluster(tmp_path_factory.mktemp("redis-cut"), masters=3)
    try:
        yield found
    finally:
        found.stop()


@pytest.fixture(params=["one Redis", "a cluster"])
def client(
    request: pytest.FixtureRequest, redis: redis_lib.Redis, tmp_path: Path
) -> Iterator[redis_lib.Redis]:
    if request.param == "one Redis":
        yield redis
        return
    cluster: LocalRedisCluster = request.getfixturevalue("cluster")
    found = redis_client(cluster.url)
    install(found)
    yield found
    found.close()


class Sends:
    """Counts what the client writes to Redis, per connection: a pipeline is one write,
    a command one."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count: Counter[int] = Counter()
        original = AbstractConnection.send_packed_command

        def counting(connection: Any, command: Any, check_health: bool = True) -> None:
            self.count[getattr(connection, "port", 0)] += 1
            original(connection, command, check_health)

        monkeypatch.setattr(AbstractConnection, "send_packed_command", counting)


def _replica_in(bucket: int) -> str:
    return next(r for r in (f"r{n}" for n in itertools.count()) if bucket_of(r, BUCKETS) == bucket)


def test_the_cut_is_read_in_a_pipeline_per_node_and_equals_the_calls_per_bucket(
    client: redis_lib.Redis, unique: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = RedisStore(client)
    spec = CollectionSpec(f"cut-{unique}", SCHEMA, ("replica_id",), buckets=BUCKETS)
    store.create_collection(spec)
    offsets = itertools.count()

    def apply(*parts: Append) -> None:
        store.apply_requests("t", 0, [(next(offsets), part) for part in parts])

    try:
        every = [((_replica_in(b), w), 1) for b in range(BUCKETS) for w in range(3)]
        apply(*route_append(Append(spec.name, "w", 1, tuple(every), 0), spec))
        group = route_append(Append(spec.name, "w", 1, tuple(every[::3]), 0), spec)
        assert len(group) == BUCKETS
        apply(*group[:5])  # a group of sixteen parts, five applied: held back
        for readable in (False, True):
            cut = read_cut(client, spec, readable)
            assert cut == per_bucket_cut(client, spec, readable)
        held = read_cut(client, spec)
        assert held.times[:5] == (1,) * 5  # just before each applied part
        assert store.reader.read_buckets(spec.name).rows == {row: 1 for row, _ in every}

        sends = Sends(monkeypatch)
        read_cut(client, spec)
        pipelined = sum(sends.count.values())
        sends.count.clear()
        per_bucket_cut(client, spec)
        assert sum(sends.count.values()) == 2 + BUCKETS
        # The settled cut, then a pipeline per node of the buckets (sixteen buckets spread
        # over every primary), the version read again at the end of the last.
        nodes = len(client.get_primaries()) if isinstance(client, redis_lib.RedisCluster) else 1
        assert pipelined == 1 + nodes

        apply(*group[5:])  # whole: every part in the cut
        store.writer.settle_cut(spec.name, 0, 300_000)
        apply(*route_append(Append(spec.name, "w", 1, tuple(every[1::3]), 0), spec))
        whole = read_cut(client, spec)
        assert whole == per_bucket_cut(client, spec) and whole.times == (3,) * BUCKETS
        rows = store.reader.read_buckets(spec.name).rows
        assert rows == {
            row: 1 + (row in dict(every[::3])) + (row in dict(every[1::3])) for row, _ in every
        }
    finally:
        store.drop_collection(spec.name)


def test_a_bucket_whose_slot_moves_is_read_alone_and_the_cut_stays_exact(
    cluster: LocalRedisCluster, unique: str
) -> None:
    """While a bucket's slot migrates, its call fails in the pipeline (ASK, then TRYAGAIN
    on the target: the bucket's keys are not all there, one never exists) and is made
    alone through the cluster client, which waits until the slot has moved and follows
    it there (MOVED): the cut and the rows are those from before."""
    client = redis_client(cluster.url)
    install(client)
    store = RedisStore(client)
    spec = CollectionSpec(f"moving-cut-{unique}", SCHEMA, ("replica_id",), buckets=8)
    store.create_collection(spec)
    try:
        rows = tuple(((f"r{n}", 0), 1) for n in range(40))
        parts = route_append(Append(spec.name, "w", 1, rows, 0), spec)
        store.apply_requests("t", 0, [(n, part) for n, part in enumerate(parts)])
        expected = read_cut(client, spec)
        unit = spec.unit(3)
        slot = key_slot(CollectionKeys(unit.name).contents.encode())
        source = cluster.slot_owner(slot)
        target = next(node for node in cluster.nodes if node != source)
        cluster.begin_migration(slot, source, target)
        cluster.migrate_keys(source, target, cluster.keys_in_slot(source, slot))
        read: list[Cut] = []
        reader = threading.Thread(target=lambda: read.append(read_cut(client, spec)))
        reader.start()
        reader.join(1.0)
        assert reader.is_alive(), "read while its bucket's slot was half moved"
        cluster.end_migration(slot, target)
        reader.join(60)
        assert read == [expected]
        for _ in range(2):  # the slot table refreshed by the redirection: as before
            assert read_cut(client, spec) == expected == per_bucket_cut(client, spec)
        assert store.reader.read_buckets(spec.name).rows == dict(rows)
    finally:
        store.drop_collection(spec.name)
        client.close()
