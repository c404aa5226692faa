"""Real replicas. A real fleet: three replicas no one here wrote (``redis-server``s, each
with Debian's ``prometheus-redis-exporter``), one ``replica run --source openmetrics``
agent each, the consumer and the controller's lease loop.

Each replica's samples reach Redis with its id prepended and equal what a direct scrape of
its exporter shows; a stopped exporter is ``up = false`` in its status row; a SIGKILLed
agent's status row expires by its TTL, and its samples go when its lease ends; and
``query`` answers from Redis with every replica down. And a replica process that
publishes its own collections through the embedded API.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_lib
from prometheus_client.parser import text_string_to_metric_families

from collection_manager.config import ReplicaConfig
from collection_manager.control.controller import Controller
from collection_manager.control.members import REMOVED
from collection_manager.core.errors import (
    CollectionManagerError,
    SchemaError,
    UnknownCollectionError,
)
from collection_manager.core.filters import eq
from collection_manager.devservices.processes import free_port
from collection_manager.storage.declared import DeclaredCollections
from collection_manager.storage.store import RedisStore
from producers.embedded import EmbeddedReplica
from producers.sources.openmetrics import METRIC_SAMPLES, SCRAPE_STATUS
from producers.sources.plugin import SourceCollection, field
from producers.sources.scrape import canonical_labels
from spark_consumers.query_watch import QuerySupervision, watch
from spark_consumers.row_ttl.retraction_timer import RetractionTimer
from tests.integration.consumer_process import run_cli
from tests.integration.own_services import OwnService
from tests.integration.spark_query import consumer_query
from tests.support import assert_eventually

EXPORTER = "prometheus-redis-exporter"
TIMEOUT = 90.0
REPLICAS = 3

Samples = dict[tuple[str, str], float]


@pytest.fixture
def config(unique: str) -> ReplicaConfig:
    """Steps of half a second; status rows expire 4 s after their agent's last word, its
    lease 9 s after (both in log time)."""
    return ReplicaConfig(
        replica_ttl_ms=9_000,
        heartbeat_interval_ms=300,
        lease_check_interval_ms=200,
        step_interval_ms=500,
        row_ttl_ms=4_000,
        collection_suffix=f"-{unique}",
        replica_namespace=f"cm:replicas:{unique}",
    )


@pytest.fixture
def controller(
    kafka: str, redis: redis_lib.Redis, endpoints: Any, topic: str, config: ReplicaConfig
) -> Iterator[Controller]:
    """The controller's lease loop in a thread; its keys and collections go afterwards."""
    controller = Controller.connect(kafka, endpoints.redis_url, topic, config)
    stop = threading.Event()
    loop = threading.Thread(target=controller.run_leases, args=(stop,))
    loop.start()
    try:
        yield controller
    finally:
        stop.set()
        loop.join(30)
        controller.close()
        store = RedisStore(redis)
        for name in DeclaredCollections(redis, config.replica_namespace).existing():
            store.drop_collection(name)
        keys = list(redis.scan_iter(match=f"{config.replica_namespace}:*"))
        if keys:
            redis.delete(*keys)


@pytest.fixture
def consumer(
    spark: Any,
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    topic: str,
    tmp_path: Path,
    controller: Controller,
) -> Iterator[None]:
    """The consumer as ``consume`` runs it, in the session's Spark: the query and the watch
    loop that ticks the retraction timer (which expires the status rows). It stops before
    the controller's cleanup."""
    url, namespace = endpoints.redis_url, controller.config.replica_namespace
    with consumer_query(spark, kafka, url, topic, tmp_path, namespace) as query:
        timer = RetractionTimer(RedisStore(redis), 0, topic)
        timer.start()
        stop = threading.Event()
        supervision = QuerySupervision(
            redis_url=url, topic=topic, timer=timer, trigger_interval_ms=200
        )
        loop = threading.Thread(target=watch, args=(query, stop, supervision))
        loop.start()
        try:
            yield
        finally:
            # Stopped at once: the watch loop's own stop waits for a pause between
            # batches, which the lease loop's ticks every 200 ms hardly leave.
            query.stop()
            stop.set()
            loop.join(60)


@dataclasses.dataclass
class Replica:
    """One real replica: its Redis, the exporter of that Redis, and its agent process."""

    replica_id: str
    redis: OwnService
    exporter: subprocess.Popen[bytes]
    target: str
    agent: subprocess.Popen[bytes] | None = None


def _start_exporter(redis_url: str, port: int, log: Path) -> subprocess.Popen[bytes]:
    command = [EXPORTER, "-redis.addr", redis_url, "-web.listen-address", f"127.0.0.1:{port}"]
    with open(log, "ab") as out:
        return subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT)


def _start_agent(replica: Replica, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    command = [
        sys.executable, "-m", "collection_manager.cli.main", "replicas", "run",
        "--id", replica.replica_id, "--source", "openmetrics", "--target", replica.target,
    ]  # fmt: skip
    with open(log, "ab") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _stop(process: subprocess.Popen[bytes] | None, sig: signal.Signals) -> None:
    if process is not None and process.poll() is None:
        os.kill(process.pid, sig)
        process.wait(30)


def _env(kafka: str, redis_url: str, topic: str, config: ReplicaConfig) -> dict[str, str]:
    return dict(
        os.environ,
        CM_KAFKA_BOOTSTRAP=kafka,
        CM_REDIS_URL=redis_url,
        CM_TOPIC=topic,
        CM_COLLECTION_SUFFIX=config.collection_suffix,
        CM_REPLICA_NAMESPACE=config.replica_namespace,
        CM_REPLICA_TTL_MS=str(config.replica_ttl_ms),
        CM_HEARTBEAT_INTERVAL_MS=str(config.heartbeat_interval_ms),
        CM_STEP_INTERVAL_MS=str(config.step_interval_ms),
        CM_ROW_TTL_MS=str(config.row_ttl_ms),
    )


@contextlib.contextmanager
def _fleet(
    own_service: Callable[[str], OwnService], unique: str, tmp_path: Path
) -> Iterator[list[Replica]]:
    """Three Redis servers with an exporter each; the exporters and agents stop on the way
    out (the Redis servers with the test)."""
    replicas = []
    try:
        for index in range(REPLICAS):
            server = own_service("redis")
            port = free_port()
            log = tmp_path / f"exporter-{index}.log"
            exporter = _start_exporter(server.address, port, log)
            target = f"http://127.0.0.1:{port}/metrics"
            replicas.append(Replica(f"redis-{index}-{unique}", server, exporter, target))
        yield replicas
    finally:
        for replica in replicas:
            _stop(replica.agent, signal.SIGKILL)
            _stop(replica.exporter, signal.SIGKILL)


def _scrape(target: str) -> Samples:
    try:
        with urllib.request.urlopen(target, timeout=5) as reply:
            text = reply.read().decode()
    except OSError as exc:  # an exporter still starting: waited for like any condition
        raise AssertionError(f"{target}: {exc}") from exc
    return {
        (sample.name, canonical_labels(sample.labels)): float(sample.value)
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def _stored(store: RedisStore, collection: str, replica_id: str) -> dict[Any, int]:
    try:
        return dict(store.snapshot(collection, eq("replica_id", replica_id)).rows)
    except UnknownCollectionError as exc:  # the agents create it once they start
        raise AssertionError(str(exc)[:200]) from exc


def _stored_samples(store: RedisStore, collection: str, replica_id: str) -> Samples:
    rows = _stored(store, collection, replica_id)
    assert all(count == 1 for count in rows.values()), rows  # keyed: one row per sample
    return {(metric, labels): value for (_, metric, labels, value) in rows}


SCRAPE_COUNT = ("redis_exporter_scrapes_total", "")
"""The exporter's count of the scrapes it served: which scrape a sample is from."""


def _matches_a_direct_scrape(store: RedisStore, collection: str, replica: Replica) -> None:
    """Every sample steady across two direct scrapes, between which the agent scraped and
    the consumer applied it, is in Redis with that value.

    Samples that changed meanwhile (uptime, byte counters, the exporter's own scrape count)
    cannot be compared to one scrape, so only the steady ones are.
    """
    before = assert_eventually(lambda: _scrape(replica.target), TIMEOUT, 0.2)

    def a_later_scrape_applied() -> Samples:
        stored = _stored_samples(store, collection, replica.replica_id)
        assert stored.get(SCRAPE_COUNT, 0) > before[SCRAPE_COUNT], "no later scrape yet"
        return stored

    stored = assert_eventually(a_later_scrape_applied, TIMEOUT, 0.2)
    after = _scrape(replica.target)
    steady = {key: value for key, value in before.items() if after.get(key) == value}
    assert len(steady) >= 50, f"only {len(steady)} steady samples"
    assert steady[("redis_up", "")] == 1.0
    differ = {key: (v, stored.get(key)) for key, v in steady.items() if stored.get(key) != v}
    example = list(differ.items())[:3]
    assert not differ, f"{len(differ)} of {len(steady)} samples differ, e.g. {example}"


def _status(store: RedisStore, collection: str, replica_id: str) -> tuple[Any, ...] | None:
    rows = list(_stored(store, collection, replica_id))
    assert len(rows) <= 1, rows
    return rows[0] if rows else None


def test_a_real_fleet_is_introspected_through_its_exporters(
    kafka: str,
    redis: redis_lib.Redis,
    endpoints: Any,
    consumer: None,
    controller: Controller,
    config: ReplicaConfig,
    own_service: Callable[[str], OwnService],
    unique: str,
    tmp_path: Path,
) -> None:
    assert shutil.which(EXPORTER), f"{EXPORTER} is missing: `collection-manager setup` installs it"
    store = RedisStore(redis)
    samples, status = (name + config.collection_suffix for name in (METRIC_SAMPLES, SCRAPE_STATUS))
    env = _env(kafka, endpoints.redis_url, controller.topic, config)
    with _fleet(own_service, unique, tmp_path) as replicas:
        for replica in replicas:
            replica.agent = _start_agent(replica, env, tmp_path / f"{replica.replica_id}.log")
        for replica in replicas:
            # Again when a gauge of the exporter's own process (goroutines, open files)
            # moved and came back between the two direct scrapes.
            assert_eventually(
                lambda r=replica: _matches_a_direct_scrape(store, samples, r), TIMEOUT, 0.5
            )

            def up(r: Replica = replica) -> None:  # its own collection: maybe a batch later
                row = _status(store, status, r.replica_id)
                assert row is not None and row[1:4] == (r.target, True, None), row

            assert_eventually(up, TIMEOUT, 0.2)

        # A replica that stops answering says so in its status row; its samples stay.
        stopped = replicas[0]
        _stop(stopped.exporter, signal.SIGTERM)

        def says_down() -> tuple[Any, ...]:
            row = _status(store, status, stopped.replica_id)
            assert row is not None and row[2] is False, row
            assert f"cannot connect to {stopped.target}" in row[3], row
            return row

        down = assert_eventually(says_down, TIMEOUT, 0.2)
        kept = _stored_samples(store, samples, stopped.replica_id)
        first_expiry = store.reader.expiries(status, [down])[down]

        def four_more_failed_scrapes() -> None:
            # Each step refreshes the status row's TTL: its expiry moves a step further.
            row = _status(store, status, stopped.replica_id)
            assert row is not None and row[2] is False, row
            expiry = store.reader.expiries(status, [row]).get(row, 0)
            assert expiry >= first_expiry + 4 * config.step_interval_ms

        assert_eventually(four_more_failed_scrapes, TIMEOUT, 0.2)
        assert _stored_samples(store, samples, stopped.replica_id) == kept != {}

        # A SIGKILLed agent: its status row expires by TTL while its lease still holds;
        # its samples go when the lease ends.
        killed = replicas[1]
        _stop(killed.agent, signal.SIGKILL)

        def status_expired() -> None:
            assert _status(store, status, killed.replica_id) is None

        assert_eventually(status_expired, TIMEOUT, 0.2)
        member = controller.member(killed.replica_id)
        assert member is not None and member.state == "active"
        assert _stored_samples(store, samples, killed.replica_id)

        def removed() -> None:
            member = controller.member(killed.replica_id)
            assert member is not None and member.state == REMOVED, member
            assert _stored(store, samples, killed.replica_id) == {}

        assert_eventually(removed, TIMEOUT, 0.5)

        # Every replica down: the collection still answers from Redis.
        last = replicas[2]
        for replica in replicas:
            _stop(replica.exporter, signal.SIGKILL)
            replica.redis.stop()
        held = _stored_samples(store, samples, last.replica_id)
        where = f"replica_id={last.replica_id}"
        done = run_cli(
            ["collections", "query", samples, "--where", where, "--format", "json"],
            60,
            CM_REDIS_URL=endpoints.redis_url,
        )
        assert done.returncode == 0, done.stderr
        answered = json.loads(done.stdout)
        assert len(answered["rows"]) == len(held) > 0
        agent_log = (tmp_path / f"{last.replica_id}.log").read_text()
        assert last.agent is not None and last.agent.poll() is None, agent_log


def test_a_replica_process_publishes_its_own_collections(
    redis: redis_lib.Redis,
    kafka: str,
    endpoints: Any,
    consumer: None,
    controller: Controller,
    config: ReplicaConfig,
    unique: str,
) -> None:
    """Whole row sets and differential updates reach Redis; a bad row is refused in the
    caller; removed by an operator, the replica stops itself and its rows are retracted."""
    store = RedisStore(redis)
    latency = SourceCollection(
        "query_latency", (field("query", "string"), field("p99_ms", "double")), expires=True
    )
    collection = latency.name + config.collection_suffix
    replica_id = f"embedded-{unique}"

    def holds(*rows: tuple[str, float]) -> Callable[[], None]:
        def check() -> None:
            expected = {(replica_id, *row): 1 for row in rows}
            assert _stored(store, collection, replica_id) == expected

        return check

    embedded = EmbeddedReplica(
        replica_id, [latency], kafka, endpoints.redis_url, controller.topic, config
    )
    with embedded as replica:
        assert replica.epoch == 1
        replica.set_rows(latency.name, [("q1", 12.5), ("q2", 3.0)])
        assert_eventually(holds(("q1", 12.5), ("q2", 3.0)), TIMEOUT, 0.2)
        replica.set_rows(latency.name, [("q1", 14.0)])
        replica.publish(latency.name, [(("q3", 1.0), 1)])
        assert_eventually(holds(("q1", 14.0), ("q3", 1.0)), TIMEOUT, 0.2)
        with pytest.raises(SchemaError, match="column 'p99_ms' expects double"):
            replica.set_rows(latency.name, [("q1", "slow")])

        controller.remove_replica(replica_id, "an operator removed it")

        def stopped_itself() -> None:
            assert replica.stopped

        assert_eventually(stopped_itself, TIMEOUT, 0.2)  # at its next heartbeat
        assert_eventually(holds(), TIMEOUT, 0.2)
        with pytest.raises(CollectionManagerError, match=r"stopped: replica .* no longer a member"):
            replica.publish(latency.name, [(("q4", 1.0), 1)])
    member = controller.member(replica_id)
    assert member is not None
    assert (member.state, member.reason) == (REMOVED, "an operator removed it")
