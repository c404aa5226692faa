"""The end-to-end benchmark's two consumer paths, the publisher, and the watcher of probes.

See ``bench/e2e.py`` for what is measured and how.
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import os
import queue
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from bench import plain_loop
from bench.cpu import cpu_by_kind
from bench.e2e_workload import Message, Probe
from collection_manager.config import (
    ConsumerConfig,
    InfraConfig,
    ReplicaConfig,
    SparkConfig,
    from_env,
)
from collection_manager.devservices import Endpoints
from collection_manager.kafka.producer import DeliveryCallback, KafkaProducer
from collection_manager.storage.client import on_every_primary, redis_client
from collection_manager.storage.keys import CollectionKeys
from spark_consumers.job import start_consumer
from spark_consumers.metrics import BatchMetrics
from spark_consumers.session import build_spark_session

if TYPE_CHECKING:
    from pyspark.sql import SparkSession
    from pyspark.sql.streaming import StreamingQuery

# What a consumer path reports on demand: its phases' seconds and batch counts.
Phases = Callable[[], dict[str, float]]


POLL_S = 0.01  # how often the watcher looks for probes: the latency's resolution


SAMPLE_S = 0.2  # how often it samples the applied-request counters


class Watcher(threading.Thread):
    """Polls Redis: when each published probe became visible, and how much was applied."""

    def __init__(self, redis_url: str, collections: Sequence[str]) -> None:
        super().__init__(name="e2e-watcher", daemon=True)
        self.client = redis_client(redis_url)
        self.stats_keys = [CollectionKeys(name).stats for name in collections]
        self.published: queue.SimpleQueue[tuple[Probe, float]] = queue.SimpleQueue()
        self.pending: dict[Probe, float] = {}
        self.latencies_s: list[float] = []
        self.timeline: list[tuple[float, int]] = []  # (monotonic time, requests applied)
        self.stopping = threading.Event()

    def run(self) -> None:
        """Checks probes every ``POLL_S`` and samples the counters every ``SAMPLE_S``."""
        next_sample = 0.0
        while not self.stopping.is_set():
            self.check_probes()
            now = time.monotonic()
            if now >= next_sample:
                self.timeline.append((now, self.applied()))
                next_sample = now + SAMPLE_S
            self.stopping.wait(POLL_S)

    def stop(self) -> None:
        """Stops polling, after one last look for probes."""
        self.stopping.set()
        self.join()
        self.check_probes()

    def check_probes(self) -> None:
        """Records the probes that are visible now."""
        while not self.published.empty():
            probe, published_at = self.published.get()
            self.pending[probe] = published_at
        if not self.pending:
            return
        probes = list(self.pending)
        with self.client.pipeline(transaction=False) as pipe:
            for probe in probes:
                pipe.hexists(probe.contents_key, probe.field)
            seen = pipe.execute()
        now = time.monotonic()
        for probe, visible in zip(probes, seen, strict=True):
            if visible:
                self.latencies_s.append(now - self.pending.pop(probe))

    def applied(self, counter: str = "requests") -> int:
        """A stats counter summed over the watched collections (requests applied so far)."""
        with self.client.pipeline(transaction=False) as pipe:
            for key in self.stats_keys:
                pipe.hget(key, counter)
            return sum(int(value or 0) for value in pipe.execute())


CPU_PREFIX = "cpu:"  # a snapshot's CPU seconds of one process kind


def machine_cpu_s() -> float:
    """CPU seconds used so far by every process on this machine, from ``/proc/stat``."""
    with open("/proc/stat") as stat:
        user, nice, system, _idle, _iowait, irq, softirq, steal = stat.readline().split()[1:9]
    ticks = sum(int(t) for t in (user, nice, system, irq, softirq, steal))
    return ticks / os.sysconf("SC_CLK_TCK")


def snapshot(phases: Phases, watcher: Watcher) -> dict[str, float]:
    """The consumer's phase totals, with what Redis and the machine used and what was written.

    ``written`` is the updates the store wrote after consolidation; Redis CPU and the
    machine's CPU show where the load lands (the machine's includes anything else running);
    ``cpu:<kind>`` is the CPU of each process kind (``bench/cpu.py``).
    """
    infos = on_every_primary(watcher.client, "INFO", "cpu")  # every master of a cluster
    return {
        **phases(),
        "redis_cpu": sum(float(i["used_cpu_user"]) + float(i["used_cpu_sys"]) for i in infos),
        "machine_cpu": machine_cpu_s(),
        "written": watcher.applied("updates"),
        **{f"{CPU_PREFIX}{kind}": seconds for kind, seconds in cpu_by_kind().items()},
    }


def wait_applied(watcher: Watcher, expected: int, timeout_s: float) -> float | None:
    """When ``expected`` requests were applied (monotonic), or None after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if watcher.applied() >= expected:
            return time.monotonic()
        time.sleep(POLL_S)
    return None


@contextmanager
def plain_consumer(endpoints: Endpoints, topic: str) -> Iterator[Phases]:
    """The baseline loop in its own process (spawned: this one has Kafka threads running)."""
    context = multiprocessing.get_context("spawn")
    ready, stop = context.Event(), context.Event()
    timings = context.Array("d", len(plain_loop.TIMINGS), lock=False)
    settings = plain_loop.LoopSettings(
        endpoints.kafka_bootstrap,
        endpoints.redis_url,
        topic,
        group_id=f"{topic}-plain",
        dead_letter_topic=f"{topic}-dead",
    )
    process = context.Process(
        target=plain_loop.run, args=(settings, ready, stop, timings), name="plain-loop"
    )
    process.start()
    try:
        if not ready.wait(60):
            raise RuntimeError("the plain loop was assigned no partitions within 60 s")

        def phases() -> dict[str, float]:
            # The loop adds a batch's timings just after its data became visible in Redis.
            time.sleep(2 * settings.poll_timeout_s)
            return dict(zip(plain_loop.TIMINGS, timings, strict=True))

        yield phases
    finally:
        stop.set()
        process.join(30)
        if process.is_alive():
            process.terminate()
            process.join()


def spark_phases(query: StreamingQuery) -> dict[str, float]:
    """Seconds per phase summed over the query's batches so far; busy = triggerExecution.

    Waits for the running batch to end first: its data can be visible in Redis well before
    it reports its progress, and it must be counted whole, on one side of the window.
    """
    deadline = time.monotonic() + 30
    while query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(POLL_S)
    if not query.isActive:
        raise RuntimeError(f"the Spark query stopped: {query.exception()}")
    totals: dict[str, float] = {}
    progress_list = query.recentProgress
    for progress in progress_list:
        for phase, ms in progress.durationMs.items():
            totals[phase] = totals.get(phase, 0.0) + ms / 1000
    totals["busy"] = totals.get("triggerExecution", 0.0)
    totals["batches"] = len(progress_list)
    return totals


def bench_session(master: str, name: str) -> SparkSession:
    """A Spark session on ``master`` as the consumer's, keeping every batch's progress:
    the busy share and the batch counts sum all of them."""
    config = dataclasses.replace(from_env(SparkConfig), spark_master=master)
    spark = build_spark_session(config, from_env(InfraConfig), name)
    spark.conf.set("spark.sql.streaming.numRecentProgressUpdates", "100000")
    return spark


@contextmanager
def spark_consumer(
    spark: SparkSession,
    endpoints: Endpoints,
    topic: str,
    trigger_ms: int,
    batch_done: Callable[[BatchMetrics, float], None] | None = None,
    batch_phases: list[dict[str, int]] | None = None,
) -> Iterator[Phases]:
    """The Spark consumer with a throwaway checkpoint.

    Args:
        batch_done: told of each batch's metrics (its steps) and its time on the driver.
        batch_phases: gets, when it stops, Spark's phases (``durationMs``) of each batch
            that read records.
    """
    with tempfile.TemporaryDirectory(prefix="bench-e2e-") as tmp:
        config = ConsumerConfig(
            topic=topic,
            dead_letter_topic=f"{topic}-dead",
            checkpoint_dir=str(Path(tmp) / "checkpoint"),
            trigger_interval_ms=trigger_ms,
        )
        query = start_consumer(
            spark,
            config,
            endpoints.kafka_bootstrap,
            endpoints.redis_url,
            replica_namespace=from_env(ReplicaConfig).replica_namespace,
            batch_done=batch_done,
        )
        try:
            yield lambda: spark_phases(query)
        finally:
            if batch_phases is not None:
                batch_phases += [
                    dict(p.durationMs) for p in query.recentProgress if p.numInputRows > 0
                ]
            query.stop()


def publish(
    producer: KafkaProducer,
    topic: str,
    messages: Sequence[Message],
    rate: float,
    watcher: Watcher | None = None,
    on_delivery: DeliveryCallback | None = None,
    probe_sent: Callable[[Probe, float], None] | None = None,
) -> tuple[float, float]:
    """Sends ``messages`` on a schedule of ``rate`` requests/s; returns (start, last send).
    Each probe's send time goes to ``watcher`` and to ``probe_sent``.

    A send that falls behind its slot goes at once, so the schedule is caught up with.
    """
    start = last = time.monotonic()
    for i, message in enumerate(messages):
        delay = start + i / rate - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        last = time.monotonic()
        producer.produce(
            topic, message.key, message.value, on_delivery, partition=message.partition
        )
        if watcher is not None and message.probe is not None:
            watcher.published.put((message.probe, last))
        if probe_sent is not None and message.probe is not None:
            probe_sent(message.probe, last)
    return start, last
