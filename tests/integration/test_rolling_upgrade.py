"""A rolling upgrade from the last release to this checkout, and a downgrade, under load.

The last release in ``RELEASES`` runs the whole pipeline (controller, consumer, two agents)
while readers of both versions query. Then, as CHANGELOG.md's Upgrading says: this
version's functions are loaded, the controller, the consumer and each agent are upgraded
one at a time, and the consumer is downgraded again. At the end Redis must hold exactly
what the agents hold (nothing lost, nothing applied twice), no reader may have failed, no
process may have exited by itself, and no request may have become a dead letter.
About a minute (three consumer starts) on the session's Kafka and Redis; the release's venv
is built once (about 16 s from pip's cache) and kept in the cache directory.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.core.filters import eq
from collection_manager.storage.store import RedisStore
from producers.agent import load_state
from schemas.introspection import introspection_specs
from tests.integration.release_install import release_bin
from tests.integration.upgrade_fleet import Reader, UpgradeFleet, wait_for_consumer
from tests.releases import releases
from tests.support import assert_eventually

pytestmark = pytest.mark.integration

NEW = Path(sys.executable).parent
REPLICAS = ("r1", "r2")
# The first agents change all through the upgrades; their successors for a few seconds.
FIRST_STEPS, LAST_STEPS, RATE = "400", "24", "4"


@pytest.fixture
def short_state_dir() -> Iterator[Path]:
    """A state directory with a short path: 0.1.0 put Spark's Unix sockets in a scratch
    folder one byte too long for Java when the consumer's pid was short enough (fixed
    since, spark_consumers/session.py): the downgraded consumer must not meet that bug."""
    folder = Path(tempfile.mkdtemp(prefix="cm-up-"))
    yield folder
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def fleet(
    endpoints: devservices.Endpoints, unique: str, tmp_path: Path, short_state_dir: Path
) -> Iterator[UpgradeFleet]:
    env = dict(
        os.environ,
        CM_KAFKA_BOOTSTRAP=endpoints.kafka_bootstrap,
        CM_REDIS_URL=endpoints.redis_url,
        CM_STATE_DIR=str(short_state_dir),
        CM_TOPIC=f"t-{unique}",
        CM_DEAD_LETTER_TOPIC=f"t-{unique}-dead",
        CM_CHECKPOINT_DIR=str(tmp_path / "checkpoint"),
        CM_TRIGGER_INTERVAL_MS="200",
        CM_SPARK_MASTER="local[2]",
        CM_REPLICA_NAMESPACE=f"cm:replicas:{unique}",
        CM_COLLECTION_SUFFIX=f"-up-{unique}",
        CM_REPLICA_TTL_MS="20000",
        CM_ROW_TTL_MS="600000",
        CM_HEARTBEAT_INTERVAL_MS="500",
        CM_LEASE_CHECK_INTERVAL_MS="500",
        CM_CONSUMER_METRICS_ADDRESS="127.0.0.1:0",
        CM_CONTROLLER_METRICS_ADDRESS="127.0.0.1:0",
        CM_AGENT_METRICS_ADDRESS="127.0.0.1:0",
    )
    admin = AdminClient({"bootstrap.servers": endpoints.kafka_bootstrap})
    topic = env["CM_TOPIC"]
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(30)
    upgrade = UpgradeFleet(env, tmp_path)
    try:
        yield upgrade
    finally:
        upgrade.stop_all()


@pytest.mark.slow  # over two minutes (two releases installed, three restarts): make test-slow
def test_a_rolling_upgrade_and_a_downgrade_lose_nothing(
    fleet: UpgradeFleet, redis: redis_lib.Redis, endpoints: devservices.Endpoints, tmp_path: Path
) -> None:
    last = releases()[-1]
    old = release_bin(last)
    topic, suffix = fleet.env["CM_TOPIC"], fleet.env["CM_COLLECTION_SUFFIX"]
    store = RedisStore(redis)
    for spec in introspection_specs():
        store.create_collection(dataclasses.replace(spec, name=spec.name + suffix))
    frontiers = "compute_frontiers" + suffix

    # The last release runs the pipeline, and its reader reads.
    fleet.start("controller", last.version, old, ["controller", "run"])
    # The last release's spellings: `consume`, `replica run`, `query` (CHANGELOG.md).
    wait_for_consumer(redis, topic, fleet.start("consumer", last.version, old, ["consume"]))
    for replica in REPLICAS:
        argv = ["replica", "run", "--id", replica, "--steps", FIRST_STEPS, "--rate", RATE]
        fleet.start(replica, last.version, old, argv)
    assert_eventually(lambda: _has_rows(store, frontiers, REPLICAS), timeout=120)
    old_query = ["query", frontiers, "--format", "json"]
    query = ["collections", "query", frontiers, "--format", "json"]
    readers = [Reader(last.version, old, old_query, fleet.env, tmp_path)]
    readers[0].start()

    # Upgrading, in CHANGELOG.md's order: the functions, then one process at a time.
    loaded = _run(NEW, ["functions", "load"], fleet.env, tmp_path)
    assert loaded.returncode == 0, loaded.stderr
    readers.append(Reader("new", NEW, query, fleet.env, tmp_path))
    readers[1].start()
    assert fleet.stop("controller") == 0
    fleet.start("controller", "new", NEW, ["controller", "run"])
    assert fleet.stop("consumer") == 0
    wait_for_consumer(redis, topic, fleet.start("consumer", "new", NEW, ["consumer", "run"]))
    states = {replica: tmp_path / f"{replica}.json" for replica in REPLICAS}
    for replica in REPLICAS:
        assert fleet.stop(replica) == 0  # a clean stop removes the replica: rows retracted
        argv = ["replicas", "run", "--id", replica, "--steps", LAST_STEPS, "--rate", RATE]
        fleet.start(replica, "new", NEW, [*argv, "--state-file", str(states[replica])])

    # ... and the consumer back to the last release.
    assert fleet.stop("consumer") == 0
    wait_for_consumer(redis, topic, fleet.start("consumer", last.version, old, ["consume"]))

    # Nothing lost, nothing twice: Redis holds exactly what the new agents hold.
    assert_eventually(lambda: _all_settled(states), timeout=180)
    assert_eventually(lambda: _redis_holds(store, states), timeout=120)
    fleet.check_running()
    for reader in readers:
        reader.stop()
    assert fleet.exits == []
    for reader in readers:
        assert reader.failures == [], reader.release
        assert reader.reads >= 3, reader.release
    assert _dead_letters(endpoints.kafka_bootstrap, fleet.env["CM_DEAD_LETTER_TOPIC"]) == 0


def _run(bin_dir: Path, argv: list[str], env: dict[str, str], cwd: Path) -> Any:
    command = [str(bin_dir / "collection-manager"), *argv]
    return subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=120)


def _has_rows(store: RedisStore, collection: str, replicas: tuple[str, ...]) -> None:
    for replica in replicas:
        assert store.snapshot(collection, eq("replica_id", replica)).rows, replica


def _all_settled(states: dict[str, Path]) -> None:
    assert all(path.exists() for path in states.values()), "an agent has not settled yet"


def _redis_holds(store: RedisStore, states: dict[str, Path]) -> None:
    for replica, path in states.items():
        for collection, rows in load_state(path).items():
            stored = store.snapshot(collection, eq("replica_id", replica)).rows
            assert dict(stored) == dict(rows), (replica, collection)


def _dead_letters(bootstrap: str, topic: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "upgrade-check"})
    try:
        metadata = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if metadata is None or metadata.error is not None:
            return 0  # never created: nothing was dead-lettered
        ends = [
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1]
            for p in metadata.partitions
        ]
        return sum(ends)
    finally:
        consumer.close()
