"""Health of a process (its loops, its readiness checks), the HTTP listener that serves it
with the Prometheus metrics, and the consumer's metrics built from what a batch reports."""

from __future__ import annotations

import socket

import pytest
from prometheus_client import CollectorRegistry, Counter

from collection_manager.config.errors import ConfigError
from collection_manager.core.cut import Cut
from collection_manager.observability.endpoint import Endpoint, parse_address
from collection_manager.observability.health import Health
from collection_manager.storage.cut import SettleResult
from spark_consumers import exporter, exporter_metrics
from spark_consumers.exporter import ConsumerObservability
from spark_consumers.metrics import BatchMetrics
from tests.support import http_get


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_loop_is_live_while_it_beats_within_its_bound() -> None:
    clock = Clock()
    health = Health(clock)
    health.watch_loop("watch", max_age_s=30)
    clock.now += 29
    assert health.liveness() == []
    clock.now += 2
    assert health.liveness() == ["loop 'watch' silent for 31 s (bound 30 s)"]
    health.beat("watch")
    assert health.liveness() == []
    clock.now += 100
    health.forget_loop("watch")  # stopped on purpose: not a dead process
    assert health.liveness() == []
    health.beat("watch")  # a beat of a loop not watched (any more) watches nothing
    clock.now += 100
    assert health.liveness() == []


def test_readiness_needs_liveness_and_every_check() -> None:
    clock = Clock()
    health = Health(clock)
    health.watch_loop("watch", max_age_s=10)
    reason: list[str | None] = [None]
    health.add_check("outage", lambda: reason[0])
    health.add_check("broken", lambda: None)
    assert health.readiness() == []
    reason[0] = "waiting out an outage"
    assert health.readiness() == ["outage: waiting out an outage"]
    clock.now += 11
    assert len(health.readiness()) == 2


def test_a_check_that_raises_says_not_ready() -> None:
    health = Health()

    def broken() -> str | None:
        raise RuntimeError("boom")

    health.add_check("broken", broken)
    assert health.readiness() == ["broken: check failed: RuntimeError: boom"]


def test_the_endpoint_serves_metrics_health_and_readiness() -> None:
    registry = CollectorRegistry()
    Counter("cm_test_things", "Things.", registry=registry).inc(3)
    health = Health()
    not_ready: list[str | None] = [None]
    health.add_check("outage", lambda: not_ready[0])
    endpoint = Endpoint("127.0.0.1:0", "CM_TEST_ADDRESS", registry, health)
    try:
        status, body = http_get(endpoint.url + "/metrics")
        assert status == 200 and "cm_test_things_total 3.0" in body
        assert http_get(endpoint.url + "/healthz") == (200, "ok\n")
        assert http_get(endpoint.url + "/readyz") == (200, "ok\n")
        not_ready[0] = "Redis does not answer"
        assert http_get(endpoint.url + "/readyz") == (503, "outage: Redis does not answer\n")
        assert http_get(endpoint.url + "/healthz") == (200, "ok\n")
        assert http_get(endpoint.url + "/other")[0] == 404
    finally:
        endpoint.close()


def test_a_taken_address_is_one_clear_error_naming_the_setting() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(ConfigError) as error:
            Endpoint(f"127.0.0.1:{port}", "CM_TEST_ADDRESS", CollectorRegistry(), Health())
    assert str(error.value) == (
        f"CM_TEST_ADDRESS=127.0.0.1:{port}: cannot listen there: the address is in use"
    )


@pytest.mark.parametrize("address", ["9400", ":9400", "host:", "host:port", "host:65536"])
def test_an_address_that_is_no_host_and_port_is_refused_with_the_bound(address: str) -> None:
    with pytest.raises(ConfigError, match="expected host:port with a port from 0 to 65535"):
        parse_address(address, "CM_TEST_ADDRESS")


def test_parse_address_takes_ipv6_in_brackets() -> None:
    assert parse_address("[::1]:9400", "CM_X") == ("::1", 9400)


def _value(name: str, **labels: str) -> float:
    value = exporter_metrics.REGISTRY.get_sample_value(name, labels)
    return 0.0 if value is None else value


def test_the_consumer_counts_what_each_batch_reports() -> None:
    observed = ConsumerObservability("metrics-topic", "127.0.0.1:1")
    counters = dict.fromkeys(exporter_metrics.APPLY_COUNTERS, 0)
    before = _value("cm_consumer_requests_applied_total", topic="metrics-topic", collection="c1")
    kinds = {"InvalidRequestError": 2}
    observed.batch(
        BatchMetrics(7, {"c1": {**counters, "requests": 5, "updates": 9}}, 2, 1, {0: 10}, 0, kinds),
        0.3,
    )
    observed.batch(BatchMetrics(8, {"c1": {**counters, "requests": 1}}, 0, 0, {0: 11}), 0.1)
    labels = {"topic": "metrics-topic", "collection": "c1"}
    assert _value("cm_consumer_requests_applied_total", **labels) == before + 6
    assert _value("cm_consumer_updates_applied_total", **labels) >= 9
    assert _value("cm_consumer_batch_duration_seconds_count", topic="metrics-topic") >= 2
    assert _value("cm_consumer_dead_letters_total", topic="metrics-topic") >= 2
    by_kind = {"topic": "metrics-topic", "kind": "InvalidRequestError"}
    assert _value("cm_consumer_dead_letters_by_kind_total", **by_kind) >= 2


def test_the_consumers_metrics_are_its_own_and_the_standard_families() -> None:
    names = {metric.name for metric in exporter_metrics.REGISTRY.collect()}
    assert "cm_consumer_batches" in names and "process_cpu_seconds" in names
    assert not any(name.startswith(("cm_controller", "cm_agent")) for name in names)


def test_the_consumer_is_ready_only_while_its_query_runs_without_an_outage() -> None:
    clock = Clock()
    observed = ConsumerObservability("ready-topic", "127.0.0.1:1", clock=clock)
    assert observed.health.readiness() == ["progress: the streaming query is not running"]
    observed.query_running(True)
    assert observed.health.readiness() == []
    observed.outage(True, retried=True)
    assert observed.health.readiness() == ["outage: waiting out an outage"]
    assert _value("cm_consumer_outage", topic="ready-topic") == 1
    observed.outage(False)
    clock.now += exporter.PROGRESS_MAX_AGE_S + 1
    observed.beat()
    assert observed.health.readiness() == ["progress: no progress for 121 s (bound 120 s)"]
    observed.progress({"t:0": 5})
    assert observed.health.readiness() == []
    observed.query_running(False)
    assert _value("cm_consumer_query_running", topic="ready-topic") == 0


def test_a_batchs_steps_sum_the_executors_rows_then_add_the_drivers_and_are_observed() -> None:
    def row(partition: int, collection: str, decode_us: int, apply_us: int) -> dict[str, object]:
        return {
            "partition": partition, "collection": collection, "dead_letters": 0, "control": 0,
            "last_offset": 5, **dict.fromkeys(exporter_metrics.APPLY_COUNTERS, 0),
            "decode_us": decode_us, "apply_us": apply_us,
        }  # fmt: skip

    metrics = BatchMetrics.of(3, [row(0, "", 100, 2_000), row(1, "", 50, 1_000)])
    assert metrics.steps_us["decode"] == 150 and metrics.steps_us["apply"] == 3_000
    assert metrics.steps_us["epochs"] == 0  # a row without the column (an older applier)
    metrics = metrics.with_driver_steps({"collect": 40_000, "record": 900})
    assert metrics.steps_us["collect"] == 40_000 and metrics.steps_us["apply"] == 3_000

    observed = ConsumerObservability("steps-topic", "127.0.0.1:1")
    before = _value("cm_consumer_batch_step_seconds_sum", topic="steps-topic", step="collect")
    observed.batch(metrics, 0.05)
    after = _value("cm_consumer_batch_step_seconds_sum", topic="steps-topic", step="collect")
    assert after - before == pytest.approx(0.04)


def test_each_bucketed_collections_cut_trail_is_the_age_of_what_it_holds_back() -> None:
    observed = ConsumerObservability("trail-topic", "127.0.0.1:1")
    held = SettleResult(Cut((3, 6)), 0, (), "held", held_since_ms=10_000)
    caught_up = SettleResult(Cut((6, 7)), 2, (), "caught_up", held_since_ms=None)
    overtaken = SettleResult(None, 0, (), "overtaken", held_since_ms=12_500)
    observed.cuts_settled([held, caught_up, overtaken], now_ms=12_000)

    def trail(collection: str) -> float | None:
        labels = {"topic": "trail-topic", "collection": collection}
        return exporter_metrics.REGISTRY.get_sample_value("cm_consumer_cut_trail_seconds", labels)

    # A cut another settle recorded first still says how far it trails; a part applied by
    # a clock ahead of the driver's is no negative trail.
    assert (trail("held"), trail("caught_up"), trail("overtaken")) == (2.0, 0.0, 0.0)
    assert _value("cm_consumer_cut_parts_trimmed_total", topic="trail-topic") == 2
    # The next round settles only "held": the others' series go (dropped, or Redis away).
    observed.cuts_settled([held], now_ms=13_500)
    assert (trail("held"), trail("caught_up"), trail("overtaken")) == (3.5, None, None)
    observed.cuts_settled([])
    assert trail("held") is None
