"""Outages: logged once when they begin and once when they end, waited out with backoff."""

from __future__ import annotations

import logging
import random
import threading

import pytest

from spark_consumers.broker_probe import BrokerProbe
from spark_consumers.supervision import MAX_DELAY_S, Outage, backoff_s, until_done

# Port 1 on loopback refuses at once: the outage's Redis record is best effort.
NOWHERE = "redis://:secret@127.0.0.1:1/0"


def test_backoff_grows_exponentially_is_jittered_and_capped() -> None:
    rng = random.Random(3)
    first = [backoff_s(1, rng) for _ in range(100)]
    assert all(0.25 <= d <= 0.5 for d in first)
    assert len(set(first)) > 90  # jittered: consumers do not retry in step
    assert all(2.0 <= backoff_s(4, rng) <= 4.0 for _ in range(100))
    assert all(MAX_DELAY_S / 2 <= backoff_s(n, rng) <= MAX_DELAY_S for n in (10, 50, 10**6))


def test_an_outage_is_logged_once_when_it_begins_and_once_when_it_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [1000.0]
    outage = Outage(NOWHERE, clock=lambda: now[0], rng=random.Random(1))
    with caplog.at_level(logging.WARNING, logger="spark_consumers.supervision"):
        for _ in range(5):
            outage.failed("ConnectionError: Error 111 connecting to redis://:secret@h:1/0")
            now[0] += 2
        assert outage.ongoing and outage.retries == 5
        outage.recovered()
        outage.recovered()  # no outage going on: says nothing
    messages = [record.getMessage() for record in caplog.records]
    assert messages == [
        "outage: ConnectionError: Error 111 connecting to redis://:***@h:1/0; retrying until "
        "it ends",
        "outage over after 10.0 s and 5 retries",
    ]
    assert not outage.ongoing


def test_until_done_retries_through_the_named_faults_only() -> None:
    outage = Outage(NOWHERE, rng=random.Random(1))
    calls = iter([ConnectionError("down"), ConnectionError("down"), "up"])

    def attempt() -> str:
        result = next(calls)
        if isinstance(result, Exception):
            raise result
        return result

    stop = threading.Event()
    # No real waiting: the test's stop event answers every wait at once.
    stop.wait = lambda _timeout=None: False  # type: ignore[method-assign]
    assert until_done(attempt, outage, stop, (ConnectionError,)) == "up"
    assert not outage.ongoing
    with pytest.raises(ValueError):
        until_done(lambda: int("x"), outage, stop, (ConnectionError,))


def test_until_done_gives_up_when_stopped() -> None:
    stop = threading.Event()
    stop.set()
    assert until_done(lambda: "never", Outage(NOWHERE), stop, (ConnectionError,)) is None


def test_kafka_answering_again_ends_only_an_outage_of_kafka() -> None:
    outage = Outage(NOWHERE, rng=random.Random(1))
    probe = BrokerProbe("127.0.0.1:1", outage)  # port 1 refuses: Kafka "is down"
    outage.failed("ConnectionError: Redis is down")
    outage.recovered(only_if="Kafka at ")
    assert outage.ongoing  # Redis's outage goes on
    outage.recovered()
    assert not probe.check(timeout_s=0.5)
    assert outage.ongoing and outage.cause.startswith("Kafka at 127.0.0.1:1 does not answer")
    outage.recovered(only_if="Redis")
    assert outage.ongoing
    outage.recovered(only_if="Kafka at 127.0.0.1:1")
    assert not outage.ongoing


def test_a_batch_finishing_does_not_end_the_outage_the_broker_probe_began() -> None:
    # A batch can finish from records fetched before the broker went away (the consumer
    # ends an outage on progress with ``unless`` the probe's cause): on 2026-12-04 that
    # logged one outage of Kafka as two.
    outage = Outage(NOWHERE, rng=random.Random(1))
    probe = BrokerProbe("127.0.0.1:1", outage)
    assert not probe.check(timeout_s=0.5)
    outage.recovered(unless="Kafka at 127.0.0.1:1")  # a batch's progress
    assert outage.ongoing
    outage.failed("ConnectionError: Redis is down")  # another cause: progress ends it
    outage.recovered(unless="Kafka at 127.0.0.1:1")
    assert not outage.ongoing
