"""The pipeline on a Redis Cluster: three masters on loopback, a slot resharded mid-run,
the consumer SIGKILLed mid-run.

``CM_REDIS_URL`` names one node; every client of the consumer, its executors, the
controller, the agents and the test finds the others. One of the test's collections is
named so that its hash slot is the first of the first master's, the slot ``redis-cli
--cluster reshard`` moves first: while producers, agents and the consumer run, its keys
migrate to another master (clients meet ASK and TRYAGAIN, then MOVED), and the final
contents must still equal the model's, with nothing applied twice.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from redis.crc import key_slot

from collection_manager.core.specs import CollectionSpec
from collection_manager.devservices.redis_cluster import LocalRedisCluster, start_cluster
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.ops import DeleteOp
from collection_manager.storage.store import RedisStore
from tests.integration.pipeline_run import pipeline_under_load
from tests.integration.test_store import ROW_SCHEMA, append, rows_of
from tests.integration.workload import (
    NAMES,
    applying,
    assert_caught_up_with_the_model,
    create_specs,
)
from tests.support import assert_eventually


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalRedisCluster]:
    found = start_cluster(tmp_path_factory.mktemp("redis-cluster"), masters=3)
    yield found
    found.stop()


def _in_slot(prefix: str, slot: int) -> str:
    """``prefix`` with a suffix that puts the first test collection's keys in ``slot``."""
    for attempt in range(1_000_000):
        unique = f"{prefix}-{attempt}"
        if key_slot(CollectionKeys(f"{NAMES[0]}-{unique}").contents.encode()) == slot:
            return unique
    raise AssertionError(f"no suffix puts a collection in slot {slot}")


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_the_pipeline_applies_exactly_once_on_a_cluster_while_a_slot_moves(
    cluster: LocalRedisCluster, kafka: str, topic: str, unique: str, tmp_path: Path
) -> None:
    source, target = cluster.nodes[0], cluster.nodes[1]
    moving = cluster.first_slot(source)
    unique = _in_slot(unique[:30], moving)
    store = RedisStore.connect(cluster.url)
    specs = create_specs(store, unique)
    with pipeline_under_load(kafka, cluster.url, topic, unique, specs, tmp_path) as run:
        assert_eventually(applying(store, specs[:1]), timeout=180, interval=0.5)
        cluster.reshard(source, target, slots=1)  # while requests keep coming
        assert cluster.slot_owner(moving) == target
        assert_eventually(run.fleet.leased, timeout=180, interval=0.5)
        # A batch spans collections on three nodes, one call each: a crash between them
        # is finished by the replay, each collection skipping what its watermark holds.
        progress = applying(store, specs)
        assert_eventually(progress, timeout=120, interval=0.2)
        run.crash_consumer()
        assert_eventually(progress, timeout=180, interval=0.5)  # the new one applies
        run.stop_producing()
        assert_eventually(lambda: run.fleet.assert_redis_holds_what_the_agents_report(store), 180)
        try:
            assert_caught_up_with_the_model(
                kafka, topic, specs + run.fleet.specs, store, run.consumer, run.consumer_log,
                run.fleet.refreshed(),
            )  # fmt: skip
        except AssertionError as failure:  # 2 of about 10 full runs: did an agent stop?
            raise AssertionError(f"agents stopped: {run.fleet.stopped() or 'none'}") from failure


def test_a_collection_whose_slot_migrates_is_written_once_whole_on_its_new_node(
    cluster: LocalRedisCluster, unique: str
) -> None:
    """The functions touch index sets they do not declare. Half-way through a migration,
    with the index sets already moved and the rest not, a call must not run on either
    node: it waits (TRYAGAIN) and runs once the slot has moved."""
    store = RedisStore.connect(cluster.url)
    name = f"moving-{unique}"
    store.create_collection(CollectionSpec(name, ROW_SCHEMA, ("replica_id",)))
    store.writer.apply(name, "t", 0, [append(0, 0, "r1", 1, rows_of("r1", 5))])
    keys = CollectionKeys(name)
    slot = key_slot(keys.contents.encode())
    source = cluster.slot_owner(slot)
    target = next(node for node in cluster.nodes if node != source)
    cluster.begin_migration(slot, source, target)
    index_sets = [k for k in cluster.keys_in_slot(source, slot) if k.startswith(keys.index_prefix)]
    assert index_sets
    cluster.migrate_keys(source, target, index_sets)

    applied: list[dict[str, int]] = []
    writer = threading.Thread(
        target=lambda: applied.append(
            store.writer.apply(name, "t", 0, [append(1, 1, "r2", 1, rows_of("r2", 3))])
        )
    )
    writer.start()
    writer.join(2)
    assert writer.is_alive(), "the call ran while its slot was half moved"
    rest = cluster.keys_in_slot(source, slot)
    cluster.migrate_keys(source, target, rest)
    cluster.end_migration(slot, target)
    writer.join(60)
    assert applied and applied[0]["requests"] == 1

    assert cluster.slot_owner(slot) == target
    assert cluster.keys_in_slot(source, slot) == []
    rows = {row: 1 for row, _ in rows_of("r1", 5) + rows_of("r2", 3)}
    assert store.snapshot(name).rows == rows
    # The index sets moved intact and still serve an indexed delete.
    store.writer.apply(name, "t", 0, [DeleteOp(2, ["replica_id:r1"], None)])
    assert store.snapshot(name).rows == {row: 1 for row, _ in rows_of("r2", 3)}
    store.drop_collection(name)
