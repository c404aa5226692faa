"""A sink (docs/concepts/sinks.md): publish to readable in its topic, against publish to
visible in Redis in the same run, and how fast it publishes a backlog.

One collection (``compute_frontiers``' schema) churns as in ``bench/e2e.py``: ``--rate``
updates/s for ``--duration`` s, applied by the no-Spark consumer loop (``bench/
plain_loop.py``: the store code the Spark consumer runs, without Spark's own latency, so
the figure is the sink's). ``sinks run`` follows it in a process of its own. Every
``--probe-every``-th request carries a probe row; its publish time is read just before
``produce``. The e2e watcher sees it in Redis (visible); a reader of the sink's topic
(confluent-kafka, ``read_committed``, as a user reads it) sees its record (readable).
p50/p99 of both over the same probes.

Then the sink is stopped, a backlog of ``--backlog`` updates is applied, and the sink is
started again: its throughput is the changes it published over the time from the
backlog's first record read to its last, and its CPU (``/proc/PID/stat``) over the same
stretch, per million changes. Anything else on the machine distorts the figures: the
load average is printed.

Run: ``.venv/bin/python -m bench.sink_publish [--rate 10000] [--duration 30]``.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from confluent_kafka import Consumer, TopicPartition

from bench.common import report, services
from bench.e2e import scratch_topic
from bench.e2e_paths import Watcher, plain_consumer, publish, wait_applied
from bench.e2e_workload import Churn, Message, Probe, _message, _value, bench_specs, workload
from bench.report import number, ratio
from bench.sink_figures import sink_publish
from collection_manager.core.sinks.spec import SinkSpec
from collection_manager.devservices import Endpoints
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.sinks.kafka_side import prepare_topics
from collection_manager.storage.client import redis_client
from collection_manager.storage.sinks import SinkCatalog
from collection_manager.storage.store import RedisStore

POLL_S = 0.05  # the sink reader's poll


class SinkReader(threading.Thread):
    """Reads the sink's topic as a user does: when each probe's record arrived, and how
    many records arrived (with the time of the first and the last) since ``mark``."""

    def __init__(self, kafka: str, topic: str, spec: Any) -> None:
        super().__init__(name="sink-reader", daemon=True)
        self.consumer = Consumer(
            {
                "bootstrap.servers": kafka,
                "group.id": f"bench-{topic}",
                "isolation.level": "read_committed",
                "auto.offset.reset": "earliest",
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, 0)])
        # A probe's row holds its sequence number in the column after replica_id.
        self.key_column = spec.columns[1]
        self.sent: dict[Any, float] = {}
        self.latencies_s: list[float] = []
        self.counted, self.first, self.last = 0, math.nan, math.nan
        self.stopping = threading.Event()

    def probe_sent(self, probe: Probe, at: float) -> None:
        self.sent[_value(self.key_column.type, probe.seq)] = at

    def mark(self) -> None:
        self.counted, self.first, self.last = 0, math.nan, math.nan

    def run(self) -> None:
        import orjson

        while not self.stopping.is_set():
            for message in self.consumer.consume(10_000, POLL_S):
                value = message.value()
                if message.error() is not None or value is None:
                    continue
                now = time.monotonic()
                self.counted += 1
                self.first = now if math.isnan(self.first) else self.first
                self.last = now
                change = orjson.loads(value)
                row = change["row"]
                if row.get("replica_id") == "probe" and change["diff"] > 0:
                    sent = self.sent.pop(row[self.key_column.name], None)
                    if sent is not None:
                        self.latencies_s.append(now - sent)
        self.consumer.close()


def cpu_s(pid: int) -> float:
    """The user and system CPU seconds of process ``pid`` so far."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@contextmanager
def sink_process(endpoints: Endpoints, name: str) -> Iterator[subprocess.Popen[bytes]]:
    env = dict(
        os.environ,
        CM_REDIS_URL=endpoints.redis_url,
        CM_KAFKA_BOOTSTRAP=endpoints.kafka_bootstrap,
        CM_SINK_POLL_INTERVAL_MS="20",
    )
    command = [sys.executable, "-m", "collection_manager.cli.main", "sinks", "run", name]
    process = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL)
    try:
        yield process
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(60)


def _ms(latencies: Sequence[float], q: int) -> float:
    if len(latencies) < 2:
        return math.nan
    return statistics.quantiles(latencies, n=100, method="inclusive")[q - 1] * 1000


def _until(check: Any, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while not check():
        if time.monotonic() > deadline:
            raise RuntimeError("the sink did not catch up in time")
        time.sleep(0.1)


def run(args: argparse.Namespace) -> dict[str, Any]:
    token = uuid.uuid4().hex[:8]
    topic = f"bench-sink-{token}"
    with services() as endpoints, scratch_topic(endpoints, topic, 1):
        [spec] = bench_specs(1, 1, token)
        store = RedisStore.connect(endpoints.redis_url)
        store.create_collection(spec)
        sink = SinkSpec(f"bench-{token}", spec.name, f"bench-sink-out-{token}")
        prepare_topics(endpoints.kafka_bootstrap, sink, 1)
        client = redis_client(endpoints.redis_url)
        SinkCatalog(client).create(sink)
        producer = KafkaProducer(ProducerConfig(endpoints.kafka_bootstrap, client_id="bench"))
        watcher, reader = Watcher(endpoints.redis_url, [spec.name]), None
        try:
            seed, load = workload([spec], args)
            reader = SinkReader(endpoints.kafka_bootstrap, sink.topic, spec)
            reader.start()
            with plain_consumer(endpoints, topic):
                publish(producer, topic, seed, math.inf)
                producer.flush()
                wait_applied(watcher, len(seed), 120)
                with sink_process(endpoints, sink.name):
                    _until(lambda: reader.counted >= sum(m.updates for m in seed), 120)
                    watcher.start()
                    rate = args.rate / args.updates
                    start, last = publish(
                        producer, topic, load, rate, watcher, probe_sent=reader.probe_sent
                    )
                    wait_applied(watcher, len(seed) + len(load), 120)
                    _until(lambda: not reader.sent, 120)
                    watcher.stop()
                backlog = _backlog(spec, args)
                publish(producer, topic, backlog, math.inf)
                producer.flush()
                wait_applied(watcher, len(seed) + len(load) + len(backlog), 300)
                changes = sum(m.updates for m in backlog)
                reader.mark()
                with sink_process(endpoints, sink.name) as process:
                    _until(lambda: not math.isnan(reader.first), 120)
                    cpu_at_first = cpu_s(process.pid)
                    _until(lambda: reader.counted >= changes, 600)
                    cpu_used = cpu_s(process.pid) - cpu_at_first
                    took_s = reader.last - reader.first
        finally:
            if reader is not None:
                reader.stopping.set()
            producer.close()
            SinkCatalog(client).drop(sink.name)
            store.drop_collection(spec.name)
    return {
        "offered": len(load) * args.updates / (last - start + args.updates / args.rate),
        "probes": len(watcher.latencies_s),
        "visible_p50_ms": _ms(watcher.latencies_s, 50),
        "visible_p99_ms": _ms(watcher.latencies_s, 99),
        "readable_p50_ms": _ms(reader.latencies_s, 50),
        "readable_p99_ms": _ms(reader.latencies_s, 99),
        "backlog_changes": changes,
        "changes_per_s": changes / took_s,
        "cpu_s_per_million": cpu_used / changes * 1e6,
        "load_average": os.getloadavg(),
    }


def _backlog(spec: Any, args: argparse.Namespace) -> list[Message]:
    churn = Churn([spec], args.keys, args.updates, replicas=("backlog",))
    seed = [_message(r) for r in churn.seed()]
    more = max(0, args.backlog - sum(m.updates for m in seed)) // args.updates
    return seed + [_message(churn.update(spec, "backlog")) for _ in range(more)]


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rate", type=float, default=10_000, help="offered updates/s")
    parser.add_argument("--duration", type=float, default=30, help="seconds of load")
    parser.add_argument("--updates", type=int, default=100, help="updates per request (even)")
    parser.add_argument("--keys", type=int, default=2_000, help="rows per replica")
    parser.add_argument("--probe-every", type=int, default=4, help="requests per probe")
    parser.add_argument("--backlog", type=int, default=300_000, help="updates of the backlog")
    return parser


def main() -> None:
    args = parser().parse_args()
    figures = run(args)
    rows = [
        (
            f.name + (f" ({f.note})" if f.note else ""),
            number(f.value, f.unit),
            number(f.baseline, f.unit) + (f" ({f.baseline_name})" if f.baseline_name else ""),
            ratio(f.ratio),
        )
        for f in sink_publish({"scale": vars(args), "figures": figures})
    ]
    report("sink_publish", ["figure", "value", "baseline (same run)", "ratio"], rows, figures)
    print(f"load average at the end: {figures['load_average'][0]:.2f}")


if __name__ == "__main__":
    main()
