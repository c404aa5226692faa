"""Writers route by bucket, end to end on real Kafka, Redis and Spark: a collection created
with ``collections create --buckets 4``, embedded replicas publishing to it, the consumer
applying it; each replica's rows land in its bucket's unit, a read of the collection returns
them all, and ``replica remove`` retracts one replica's rows with a fenced delete that
reached its bucket only."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.cli.main import main
from collection_manager.config import ConsumerConfig, ReplicaConfig
from collection_manager.core.buckets import bucket_of
from collection_manager.storage.store import RedisStore
from producers.embedded import EmbeddedReplica
from producers.sources.plugin import SourceCollection, field
from spark_consumers.job import start_consumer
from tests.support import assert_eventually

BUCKETS = 4
SIZES = SourceCollection("sizes", (field("worker", "long"), field("size", "long")))
# r0 and r2 share bucket 3, r1 is in bucket 1: removing r0 must leave r2's rows beside it.
REPLICAS = ("r0", "r1", "r2")
REMOVED = "r0"


def _rows(replica: str) -> list[tuple[int, int]]:
    return [(worker, 10 * worker + int(replica[1:])) for worker in range(5)]


def _held(replicas: tuple[str, ...]) -> dict[tuple[Any, ...], int]:
    return {(replica, *row): 1 for replica in replicas for row in _rows(replica)}


@pytest.fixture
def setting(
    monkeypatch: pytest.MonkeyPatch,
    endpoints: devservices.Endpoints,
    topic: str,
    unique: str,
    tmp_path: Path,
) -> ReplicaConfig:
    """The CLI and the replicas pointed at the session's services, with this test's topic,
    replica namespace and collection suffix (the built-in collections a removal names do
    not exist under it: their deletes are dead letters of this topic only)."""
    monkeypatch.setenv("CM_REDIS_URL", endpoints.redis_url)
    monkeypatch.setenv("CM_KAFKA_BOOTSTRAP", endpoints.kafka_bootstrap)
    monkeypatch.setenv("CM_STATE_DIR", str(tmp_path / "state"))
    monkeypatch.setenv("CM_TOPIC", topic)
    monkeypatch.setenv("CM_REPLICA_NAMESPACE", f"cm:replicas:{unique}")
    monkeypatch.setenv("CM_COLLECTION_SUFFIX", f"-{unique}")
    return ReplicaConfig(
        step_interval_ms=200,
        heartbeat_interval_ms=200,
        replica_namespace=f"cm:replicas:{unique}",
        collection_suffix=f"-{unique}",
    )


@pytest.fixture
def collection(setting: ReplicaConfig, redis: redis_lib.Redis, tmp_path: Path) -> Iterator[str]:
    spec = SIZES.spec(setting.collection_suffix)
    yield spec.name
    store = RedisStore(redis)
    if spec.name in store.collections():
        store.drop_collection(spec.name)
    keys = list(redis.scan_iter(match=f"{setting.replica_namespace}:*"))
    if keys:
        redis.delete(*keys)


def _cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def test_replicas_publish_to_their_buckets_and_a_removal_reaches_one(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: devservices.Endpoints,
    topic: str,
    setting: ReplicaConfig,
    collection: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert {bucket_of(r, BUCKETS) for r in REPLICAS} == {1, 3}  # two buckets, one shared
    assert bucket_of("r0", BUCKETS) == bucket_of("r2", BUCKETS)
    schema = tmp_path / "sizes.avsc"
    schema.write_text(json.dumps(SIZES.spec(setting.collection_suffix).row_schema))
    create = ["collections", "create", collection, "--schema", str(schema), "--index", "replica_id"]
    assert _cli(capsys, *create, "--buckets", str(BUCKETS)) == (
        0,
        f"created {collection} in 4 buckets by replica_id on 4 partitions of {topic}, "
        "each bucket its own\n",
        "",
    )
    # Its buckets cannot change while it lives: one line, nothing written.
    status, out, err = _cli(capsys, *create, "--buckets", "8")
    assert (status, out) == (1, "")
    assert err.startswith(
        f"error: collection {collection} exists with 4 buckets by replica_id, not 8 buckets "
        "by replica_id: the buckets of a live collection cannot change. Offline: stop"
    )
    assert err.count("\n") == 1
    store = RedisStore(redis)
    assert store.spec(collection).buckets == BUCKETS

    dead = f"{topic}-dead"
    admin = AdminClient({"bootstrap.servers": kafka})  # alive until its answer came
    admin.create_topics([NewTopic(dead, 1, 1)])[dead].result(30)
    config = ConsumerConfig(
        topic=topic,
        dead_letter_topic=dead,
        checkpoint_dir=str(tmp_path / "checkpoint"),
        trigger_interval_ms=200,
    )
    replicas = [
        EmbeddedReplica(r, [SIZES], kafka, endpoints.redis_url, topic, setting) for r in REPLICAS
    ]
    query = None
    try:
        for replica in replicas:
            replica.start()  # declares the bucketed collection: not refused for its buckets
            replica.set_rows("sizes", _rows(replica.replica_id))
        # After the replicas' first requests: a topic just created may not be described yet.
        query = start_consumer(
            spark, config, kafka, endpoints.redis_url, replica_namespace=setting.replica_namespace
        )

        def applied(replicas: tuple[str, ...]) -> None:
            assert query is not None
            if query.exception() is not None:
                raise RuntimeError(f"the query failed: {query.exception()}")
            for bucket in range(BUCKETS):
                mine = tuple(r for r in replicas if bucket_of(r, BUCKETS) == bucket)
                assert store.snapshot(f"{collection}#{bucket}").rows == _held(mine)
            assert store.reader.read_buckets(collection).rows == _held(replicas)

        assert_eventually(lambda: applied(REPLICAS), timeout=180, interval=0.5)
        assert store.snapshot(collection).rows == _held(REPLICAS)

        assert _cli(capsys, "replicas", "remove", REMOVED, "--yes")[0] == 0
        kept = tuple(r for r in REPLICAS if r != REMOVED)
        assert_eventually(lambda: applied(kept), timeout=60, interval=0.5)
        # One fenced delete, keyed by the removed replica's bucket: only there is the fence.
        removed_bucket = bucket_of(REMOVED, BUCKETS)
        fences = {b: store.reader.fences(f"{collection}#{b}") for b in range(BUCKETS)}
        assert {b: f for b, f in fences.items() if f} == {removed_bucket: {REMOVED: 1}}

        status, out, err = _cli(capsys, "collections", "show", collection, "--format", "json")
        described = json.loads(out)
        assert (status, err, described["buckets"], described["rows"]) == (0, "", 4, 10)
        assert [b["rows"] for b in described["bucket_rows"]] == [
            len(_held(tuple(r for r in kept if bucket_of(r, BUCKETS) == b))) for b in range(BUCKETS)
        ]
    finally:
        for replica in replicas:
            replica.stop("test over")
        if query is not None:
            query.stop()
