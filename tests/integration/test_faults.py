"""Faults of the services around the consumer, injected while it applies: it waits them out.

Each test runs the consumer as an operator does (a ``consume`` process) against a service of
its own (a Redis, or a Kafka broker: a local process faulted with signals, or a container
faulted through the container API, as ``CM_TEST_SERVICES`` says), with three producers of
random requests, two replica agents and a controller checking leases of 4 s, all running
while the fault is injected.
Then it holds the final contents to the model fed with every request in Kafka order
(nothing lost, nothing applied twice) and to what the agents report they published; checks
that no replica was removed by the outage, that the consumer never exited, and that it
exits 0 on SIGTERM. Each prints how long the consumer took to apply again after the
service was back (docs/operations.md, "Faults").
"""

from __future__ import annotations

import re
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.core.specs import CollectionSpec
from collection_manager.storage.store import RedisStore
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.fleet import TTL_MS, Fleet, replica_config
from tests.integration.own_services import OwnService
from tests.integration.workload import (
    assert_caught_up_with_the_model,
    create_specs,
    produce_until,
)
from tests.support import assert_eventually

# The agents publish for about 15 s after they start, a few seconds before the fault:
# their changes are on their way while it lasts.
AGENT_STEPS = 60
# About 150 random requests a second in all: enough to be mid-batch at any moment, few
# enough that the consumer keeps up and applies heartbeats soon after they are sent.
PRODUCER_PAUSE_S = 0.02


@pytest.fixture
def own_redis(own_service: Callable[[str], OwnService]) -> OwnService:
    return own_service("redis")


@pytest.fixture
def own_kafka(own_service: Callable[[str], OwnService]) -> OwnService:
    return own_service("kafka")


def _run_through(
    fault: Callable[[], None],
    faulty: OwnService,
    kafka: str,
    redis_url: str,
    topic: str,
    unique: str,
    tmp_path: Path,
) -> str:
    """Runs consumer, producers and fleet, injects ``fault``, checks the result; returns the log."""
    store = RedisStore.connect(redis_url)
    specs: list[CollectionSpec] = create_specs(store, unique)
    log = tmp_path / "consumer.log"
    env = consumer_env(kafka, redis_url, topic, tmp_path)
    env["CM_REPLICA_NAMESPACE"] = replica_config(unique).replica_namespace
    consumer = start_consumer(env, log)
    stop = threading.Event()
    producers = [
        threading.Thread(
            target=produce_until, args=(kafka, topic, specs, p, stop, PRODUCER_PAUSE_S)
        )
        for p in range(3)
    ]
    applied = [0]
    fleet: Fleet | None = None

    def applying() -> None:
        assert consumer.poll() is None, log.read_text()[-3000:]
        total = sum(store.stats(spec.name).get("requests", 0) for spec in specs)
        assert total > applied[0]
        applied[0] = total

    try:
        for thread in producers:
            thread.start()
        assert_eventually(applying, timeout=120, interval=0.5)
        fleet = Fleet.start(kafka, redis_url, topic, unique, AGENT_STEPS)
        before = assert_eventually(fleet.leased, timeout=90, interval=0.2)
        fault()
        back_ms = int(time.time() * 1000) - int((time.monotonic() - faulty.outage[1]) * 1000)
        assert_eventually(lambda: fleet.log_time_reached(back_ms), 120, interval=0.1)  # type: ignore[union-attr]
        recovery = time.monotonic() - faulty.outage[1]
        print(
            f"outage {faulty.outage[1] - faulty.outage[0]:.1f} s; the consumer applied what "
            f"was sent after it {recovery:.1f} s after the service was back"
        )
        assert_eventually(applying, timeout=120, interval=0.1)
        fleet.assert_nobody_removed()
        stop.set()
        for thread in producers:
            thread.join(60)
        assert_eventually(
            lambda: fleet.assert_redis_holds_what_the_agents_report(store),
            120,
            interval=1,  # type: ignore[union-attr]
        )
        every = specs + fleet.specs
        assert_caught_up_with_the_model(
            kafka, topic, every, store, consumer, log.read_text, fleet.refreshed()
        )
        # Heartbeats flow and renew again, and nobody was removed meanwhile: a lease left
        # expired by the outage would have been acted on within a few checks.
        assert_eventually(lambda: fleet.assert_renewed_since(before), 60)  # type: ignore[union-attr]
        time.sleep(TTL_MS / 1000)
        fleet.assert_nobody_removed()
        consumer.send_signal(signal.SIGTERM)
        assert consumer.wait(60) == 0, log.read_text()[-3000:]
    finally:
        stop.set()
        if fleet is not None:
            fleet.stop()
        if consumer.poll() is None:
            kill(consumer)
    output = log.read_text()
    print("\n".join(re.findall(r".*outage.*", output)))
    return output


def test_redis_sigkilled_and_restarted_mid_run(
    kafka: str, topic: str, own_redis: OwnService, unique: str, tmp_path: Path
) -> None:
    output = _run_through(
        lambda: own_redis.sigkill_and_restart(down_s=3.0),
        own_redis, kafka, own_redis.address, topic, unique, tmp_path,
    )  # fmt: skip
    assert "WARNING spark_consumers.supervision: outage: " in output


@pytest.mark.slow  # about a minute: make test-slow, not make test
def test_redis_paused_longer_than_the_lease_ttl(
    kafka: str, topic: str, own_redis: OwnService, unique: str, tmp_path: Path
) -> None:
    _run_through(
        lambda: own_redis.pause(2 * TTL_MS / 1000),
        own_redis, kafka, own_redis.address, topic, unique, tmp_path,
    )  # fmt: skip


# The container pass of make test runs this one: it once failed only there.
@pytest.mark.containers
def test_kafka_broker_stopped_for_20_s(
    own_kafka: OwnService, endpoints: devservices.Endpoints, unique: str, tmp_path: Path
) -> None:
    kafka = own_kafka.address
    topic = f"t-{unique}"
    admin = AdminClient({"bootstrap.servers": kafka})
    admin.create_topics([NewTopic(topic, num_partitions=4, replication_factor=1)])[topic].result(30)
    output = _run_through(
        lambda: own_kafka.sigkill_and_restart(down_s=20.0),
        own_kafka, kafka, endpoints.redis_url, topic, unique, tmp_path,
    )  # fmt: skip
    # Spark waits for the broker inside its batch. Whichever detector reports first (the
    # broker probe, or the query failing in a batch: it depends on timing, and on
    # containers the query often wins), the outage is logged once when it begins and once
    # when it ends; the probe names the broker at most once.
    began = output.count("WARNING spark_consumers.supervision: outage: ")
    assert began >= 1 and output.count("outage over after") == began, output[-3000:]
    assert output.count(f"outage: Kafka at {kafka} does not answer") <= 1, output[-3000:]
