"""Cancel-to-quiet: how fast a cancelled subscribe stops loading Kafka
(docs/concepts/epochs-and-fences.md).

A 1,000,000-row snapshot is emitted through the agent's producer wrapper to a real topic,
one message per row, all with one key (one collection, one partition). The baseline emits
it whole and flushes. The cancel runs cancel the subscribe's token half-way through the
baseline's time and purge the producer. *Quiet* is reached when the emitting thread has
stopped, the local queue is empty (purged; in-flight messages acknowledged) and the topic's
high watermark then stays put for a settle window. Target: quiet within 50 ms (issue 19;
100 ms before).

A third series holds batches back (5 s linger) so the local queue is full at the cancel:
the worst case for the purge. There every purged message's delivery report is served
before the queue counts as empty, and confluent-kafka builds a Python message for each one
that carries a callback (ours all do: the agent records what was delivered). Its baseline
is that floor, measured alike: a bare ``confluent_kafka.Producer`` whose queue of as many
messages, each with a no-op callback, is purged and its reports served.
Run: ``.venv/bin/python -m bench.cancel_to_quiet [--rows N]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from bench.common import report, services
from bench.targets import CANCEL_QUIET_MS
from collection_manager.core.shutdown import Cancelled, ShutdownToken, guard
from collection_manager.kafka.producer import KafkaProducer, OptionValue, ProducerConfig
from producers.simulated import Update, large_snapshot

KEY = b"arrangement_sizes"
PARTITIONS = 4
SETTLE_S = 0.5  # loopback: a message still on its way lands within milliseconds
TARGET_MS = CANCEL_QUIET_MS.bound


def encode(update: Update) -> bytes:
    """A stand-in for the Avro codec: the benchmark measures emission, not encoding."""
    return repr(update).encode()


@contextmanager
def fresh_topic(bootstrap: str) -> Iterator[str]:
    """A new 4-partition topic, deleted afterwards."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    name = f"bench-cancel-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, num_partitions=PARTITIONS, replication_factor=1)])[
        name
    ].result(30)
    try:
        yield name
    finally:
        admin.delete_topics([name])[name].result(30)


def high_watermark(bootstrap: str, topic: str) -> int:
    """Messages the broker holds for ``topic`` (sum of the partitions' high watermarks)."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"hwm-{topic}"})
    try:
        return sum(
            consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=30)[1]
            for p in range(PARTITIONS)
        )
    finally:
        consumer.close()


@dataclasses.dataclass(frozen=True)
class Scenario:
    """Producer settings of one series of runs.

    Attributes:
        name: shown in the table.
        queue: local queue limit (messages).
        held: batches leave only after 5 s (or 100 MB), so the local queue fills up as
            behind a stalled broker; the run cancels once the queue is full instead of
            half-way through a baseline (which a held queue cannot have).
    """

    name: str
    queue: int
    held: bool = False

    def config(self, bootstrap: str) -> ProducerConfig:
        extra: dict[str, OptionValue] = {}
        if self.held:
            extra = {"batch.num.messages": 1_000_000, "message.max.bytes": 100_000_000}
        return ProducerConfig(
            bootstrap,
            linger_ms=5_000 if self.held else 5,
            batch_size=100_000_000 if self.held else 1_000_000,
            queue_max_messages=self.queue,
            extra=extra,
        )

    def producer(self, bootstrap: str) -> KafkaProducer:
        return KafkaProducer(self.config(bootstrap))


SCENARIOS = (
    Scenario("queue 100k", 100_000),
    Scenario("queue 10k", 10_000),
    Scenario("queue 100k, full (held)", 100_000, held=True),
)


def emit(producer: KafkaProducer, topic: str, rows: int, token: ShutdownToken) -> int:
    """Emits the snapshot until it ends or the token is cancelled; returns rows emitted."""
    emitted = 0
    try:
        for update in guard(large_snapshot(rows), token):
            producer.produce(topic, KEY, encode(update))
            emitted += 1
    except Cancelled:
        pass
    return emitted


def _ignore(_err: object, _msg: object) -> None:
    pass


def report_floor_ms(bootstrap: str, rows: int, scenario: Scenario) -> float:
    """Ms for a bare confluent-kafka producer to purge a full held queue of messages that
    carry a (no-op) delivery callback and serve their reports: the held series' floor."""
    with fresh_topic(bootstrap) as topic:
        bare = Producer(scenario.config(bootstrap).to_librdkafka())
        for update in large_snapshot(min(rows, scenario.queue)):
            bare.produce(topic, value=encode(update), key=KEY, on_delivery=_ignore)
        start = time.perf_counter()
        bare.purge(in_queue=True, in_flight=False, blocking=True)
        while len(bare):
            bare.poll(0.001)
        return 1000 * (time.perf_counter() - start)


def baseline(bootstrap: str, rows: int, scenario: Scenario) -> float:
    """Seconds to emit the whole snapshot and flush it."""
    with fresh_topic(bootstrap) as topic:
        producer = scenario.producer(bootstrap)
        start = time.perf_counter()
        emit(producer, topic, rows, ShutdownToken("baseline"))
        assert producer.flush(120) == 0
        elapsed = time.perf_counter() - start
        assert high_watermark(bootstrap, topic) == rows
        return elapsed


@dataclasses.dataclass
class CancelRun:
    """What one cancel run measured."""

    cancel_at_s: float
    emitted: int
    queued_at_cancel: int
    purged_ms: float
    stopped_ms: float
    quiet_ms: float
    purged: int
    in_flight_at_cancel: int
    after_quiet: int


def wait_to_cancel(producer: KafkaProducer, scenario: Scenario, after_s: float, rows: int) -> float:
    """Waits ``after_s`` (or, when held, until the queue is full); returns seconds waited.

    A snapshot smaller than the queue fills it only up to its own size.
    """
    start = time.perf_counter()
    if not scenario.held:
        time.sleep(after_s)
    while scenario.held and len(producer) < min(scenario.queue, rows):
        time.sleep(0.001)
    return time.perf_counter() - start


def cancel_run(bootstrap: str, rows: int, scenario: Scenario, after_s: float) -> CancelRun:
    """Emits in a thread, cancels it and measures the way to quiet."""
    with fresh_topic(bootstrap) as topic:
        producer = scenario.producer(bootstrap)
        token = ShutdownToken("subscribe")
        emitted: list[int] = []
        thread = threading.Thread(target=lambda: emitted.append(emit(producer, topic, rows, token)))
        thread.start()
        cancel_at = wait_to_cancel(producer, scenario, after_s, rows)
        delivered_before, queued = producer.stats().delivered, len(producer)
        start = time.perf_counter()
        token.cancel("benchmark cancel")
        purged = producer.purge("benchmark cancel")
        purged_ms = 1000 * (time.perf_counter() - start)
        thread.join()
        stopped_ms = 1000 * (time.perf_counter() - start)
        while len(producer):  # in-flight messages: their acknowledgements
            producer.poll(0.001)
        quiet_ms = 1000 * (time.perf_counter() - start)
        at_quiet = high_watermark(bootstrap, topic)
        time.sleep(SETTLE_S)
        settled = high_watermark(bootstrap, topic)
        stats = producer.stats()
        assert stats.pending == 0 and stats.failed == 0 and settled == stats.delivered
        return CancelRun(
            cancel_at, emitted[0], queued, purged_ms, stopped_ms, quiet_ms,
            max(purged, stats.purged), stats.delivered - delivered_before, settled - at_quiet,
        )  # fmt: skip


COLUMNS = (
    "scenario", "baseline s", "cancel at s", "emitted", "queued at cancel", "purge ms",
    "stopped ms", "quiet ms", "purged", "reached broker after cancel", "after quiet",
    "bare purge and reports ms (held baseline)",
)  # fmt: skip


def series(bootstrap: str, rows: int, scenario: Scenario, repeats: int) -> list[dict[str, Any]]:
    """The baseline of ``scenario`` and ``repeats`` runs cancelled half-way through it; a
    held series instead times its floor once before each run."""
    whole = None if scenario.held else baseline(bootstrap, rows, scenario)
    half = (whole or 0) / 2
    runs = []
    for _ in range(repeats):
        floor = report_floor_ms(bootstrap, rows, scenario) if scenario.held else None
        run = cancel_run(bootstrap, rows, scenario, half)
        runs.append(
            {
                "scenario": scenario.name,
                "baseline_s": whole,
                "report_floor_ms": floor,
                **dataclasses.asdict(run),
            }
        )
    return runs


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Every run of every scenario, with the median and maximum quiet time."""
    runs: list[dict[str, Any]] = []
    with services() as endpoints:
        for scenario in SCENARIOS:
            runs += series(endpoints.kafka_bootstrap, args.rows, scenario, args.repeats)
    quiet = [run["quiet_ms"] for run in runs]
    return {
        "snapshot_rows": args.rows,
        "target_ms": TARGET_MS,
        "median_quiet_ms": statistics.median(quiet),
        "max_quiet_ms": max(quiet),
        "settle_s": SETTLE_S,
        "runs": runs,
    }


def main() -> None:
    args = parser().parse_args()
    summary = run(args)
    runs = summary["runs"]
    fields = ("scenario", "baseline_s", "cancel_at_s", "emitted", "queued_at_cancel",
              "purged_ms", "stopped_ms", "quiet_ms", "purged", "in_flight_at_cancel",
              "after_quiet", "report_floor_ms")  # fmt: skip
    report("cancel_to_quiet", COLUMNS, [[run[f] for f in fields] for run in runs], summary)
    median, most = summary["median_quiet_ms"], summary["max_quiet_ms"]
    print(f"quiet after cancel: median {median:.1f} ms, max {most:.1f} ms")


if __name__ == "__main__":
    main()
