"""A live pipeline every process of which a real Prometheus scrapes: ``consumer run``,
``controller run``, two ``replicas run`` agents and ``server run``, each a process with its
listener on, on the session's Kafka and Redis under the test's own topic, replica namespace
and collection suffix.

The agents' ``compute_frontiers`` is bucketed (as ``collections create-introspection
--buckets 4`` makes it) and a raw writer sends it one request split over several buckets;
one request is a dead letter; and readers use the HTTP API all along, as the console does:
lists, streamed row reads, a refused read, and one change stream kept open. So each family
of metrics the processes serve has its series.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import redis
from confluent_kafka.admin import AdminClient

from collection_manager.client import BadRequest, Client, ClientError
from collection_manager.core.requests import Append
from collection_manager.devservices.processes import free_port
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.storage.client import redis_client
from collection_manager.storage.store import RedisStore
from producers.routing import messages_for
from schemas.introspection import introspection_spec
from tests.integration.consumer_process import consumer_env, kill, start_consumer
from tests.integration.local_prometheus import LocalPrometheus
from tests.support import assert_eventually, http_get

BUCKETS = 4
AGENTS = 2
# The consumer's Spark start on a loaded machine, then its first batches.
START_S = 180.0


@dataclasses.dataclass
class WatchedPipeline:
    """What a test reads: Prometheus, the API's URL, the bucketed collection, the logs."""

    prometheus: LocalPrometheus
    api: str
    bucketed: str
    agents: list[str]
    logs: Path
    readers: _Readers | None = None

    def log_tails(self) -> str:
        """The end of every process's log, and what the readers met, for a failure's message."""
        tails = []
        for log in sorted(self.logs.glob("*.log")):
            tails.append(f"--- {log.name}\n{log.read_text(errors='replace')[-1500:]}")
        if self.readers is not None:
            tails.append(f"--- readers: {self.readers.changes} changes, {self.readers.errors}")
        return "\n".join(tails)


class _Readers:
    """Readers of the API in threads: every 0.5 s a list, a streamed read and the replicas,
    and one change stream open until :meth:`stop`."""

    def __init__(self, api: str, collection: str) -> None:
        self.api, self.collection = api, collection
        self.changes = 0
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._threads = [
            threading.Thread(target=self._poll, name="api-reader", daemon=True),
            threading.Thread(target=self._follow, name="change-stream", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    def _poll(self) -> None:
        with Client(self.api, timeout=30) as client:
            with contextlib.suppress(BadRequest):  # one refused read: a bad-parameter problem
                client.rows(self.collection, where="no_such_column=1")
            while not self._stop.wait(0.5):
                try:
                    client.collections()
                    with client.rows(self.collection) as rows:
                        sum(1 for _ in rows)  # streamed to its end
                    client.replicas()
                except ClientError as exc:
                    self.errors.append(repr(exc))

    def _follow(self) -> None:
        try:
            with Client(self.api, timeout=30) as client, client.changes(self.collection) as feed:
                for _ in feed:
                    self.changes += 1
                    if self._stop.is_set():
                        return
        except ClientError as exc:
            self.errors.append(repr(exc))

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(30)  # the change stream ends at its next event: an agent's next step


def _spawn(argv: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "collection_manager.cli.main", *argv],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM (each stops cleanly on it), SIGKILL after 30 s."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
    try:
        process.wait(30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(30)


def _produce_a_group_and_a_dead_letter(
    kafka: str, topic: str, store: RedisStore, name: str
) -> None:
    """One append split over several buckets (a group of parts, as a raw writer sends it,
    docs/howto/buckets.md) and one record that is no request."""
    spec = store.spec(name)
    rows = tuple(((f"g{n}", "e1", 0, 1), 1) for n in range(8))
    append = Append(name, "dashboard-writer", 1, rows, int(time.time() * 1000))
    messages = messages_for(append, spec)
    assert len(messages) > 1, messages  # parts in several buckets
    producer = KafkaProducer(ProducerConfig(kafka))
    for message in messages:
        producer.produce(topic, message.key, message.value, partition=message.partition)
    producer.produce(topic, name.encode(), b"not a request")
    producer.close()


@dataclasses.dataclass(frozen=True)
class _Plan:
    """The test's names and each process's listener."""

    kafka: str
    redis_url: str
    topic: str
    unique: str
    logs: Path
    listeners: dict[str, str] = dataclasses.field(default_factory=dict)

    @property
    def suffix(self) -> str:
        return f"-{self.unique}"

    @property
    def namespace(self) -> str:
        return f"cm:replicas:{self.unique}"

    @property
    def agents(self) -> list[str]:
        return [f"a{i}-{self.unique}" for i in range(AGENTS)]

    def listen(self, name: str) -> str:
        """The loopback address of ``name``'s listener (a free port, chosen once)."""
        return self.listeners.setdefault(name, f"127.0.0.1:{free_port()}")

    def env(self, **more: str) -> dict[str, str]:
        return {
            **os.environ,
            "CM_KAFKA_BOOTSTRAP": self.kafka,
            "CM_REDIS_URL": self.redis_url,
            "CM_TOPIC": self.topic,
            "CM_REPLICA_NAMESPACE": self.namespace,
            "CM_COLLECTION_SUFFIX": self.suffix,
            **more,
        }

    def jobs(self) -> dict[str, list[str]]:
        """Prometheus's jobs: the alert rules' names, and ``cm-server``."""
        return {
            "cm-consumer": [self.listen("consumer")],
            "cm-controller": [self.listen("controller")],
            "cm-agent": [self.listen(agent) for agent in self.agents],
            "cm-server": [self.listen("server")],
        }


def _start(plan: _Plan, tmp_path: Path, started: list[subprocess.Popen[bytes]]) -> None:
    """The consumer first (its Spark start is the long part), then the others at once."""
    env = consumer_env(plan.kafka, plan.redis_url, plan.topic, tmp_path) | {
        "CM_REPLICA_NAMESPACE": plan.namespace,
        "CM_CONSUMER_METRICS_ADDRESS": plan.listen("consumer"),
    }
    started.append(start_consumer(env, plan.logs / "consumer.log"))
    controller = plan.env(CM_CONTROLLER_METRICS_ADDRESS=plan.listen("controller"))
    started.append(_spawn(["controller", "run"], controller, plan.logs / "controller.log"))
    for agent in plan.agents:
        argv = ["replicas", "run", "--id", agent, "--workers", "2", "--dataflows", "2"]
        env = plan.env(CM_AGENT_METRICS_ADDRESS=plan.listen(agent), CM_STEP_INTERVAL_MS="500")
        started.append(_spawn(argv, env, plan.logs / f"{agent}.log"))
    server = plan.env(CM_HTTP_ADDRESS=plan.listen("server"))
    started.append(_spawn(["server", "run"], server, plan.logs / "server.log"))


def _stop_all(started: list[subprocess.Popen[bytes]]) -> None:
    """The others cleanly (SIGTERM), then the consumer, the first started."""
    for process in started[1:]:
        _stop(process)
    if started and started[0].poll() is None:
        kill(started[0])  # its whole group, the Spark JVM with it: no clean stop to wait for


def _clean(plan: _Plan, client: redis.Redis) -> None:
    """Drops the test's collections and replica keys, and the dead-letter topic."""
    store = RedisStore(client)
    for name in store.collections():
        if name.endswith(plan.suffix):
            store.drop_collection(name)
    keys = list(client.scan_iter(match=f"{plan.namespace}:*"))
    if keys:
        client.delete(*keys)
    AdminClient({"bootstrap.servers": plan.kafka}).delete_topics([f"{plan.topic}-dead"])


@contextlib.contextmanager
def watched_pipeline(
    kafka: str, redis_url: str, topic: str, unique: str, tmp_path: Path
) -> Iterator[WatchedPipeline]:
    """Starts it all at once, then the readers once the consumer applied the agents' rows;
    stops it all on the way out and drops what the test made."""
    plan = _Plan(kafka, redis_url, topic, unique, tmp_path / "logs")
    plan.logs.mkdir()
    client = redis_client(redis_url)
    store = RedisStore(client)
    frontiers = introspection_spec("compute_frontiers")
    bucketed = dataclasses.replace(frontiers, name=frontiers.name + plan.suffix, buckets=BUCKETS)
    store.create_collection(bucketed)
    started: list[subprocess.Popen[bytes]] = []
    prometheus: LocalPrometheus | None = None
    readers: _Readers | None = None
    try:
        _start(plan, tmp_path, started)
        _produce_a_group_and_a_dead_letter(kafka, topic, store, bucketed.name)
        prometheus = LocalPrometheus(tmp_path / "prometheus", plan.jobs())
        api = f"http://{plan.listen('server')}"
        pipeline = WatchedPipeline(prometheus, api, bucketed.name, plan.agents, plan.logs)

        def applied() -> None:
            for process in started:
                assert process.poll() is None, pipeline.log_tails()
            assert http_get(f"{api}/readyz")[0] == 200
            held = {row[0] for row in store.snapshot(bucketed.name).rows}
            assert set(plan.agents) <= held, held

        assert_eventually(applied, timeout=START_S, interval=0.5)
        readers = pipeline.readers = _Readers(api, bucketed.name)
        yield pipeline
    finally:
        if readers is not None:
            readers.stop()
        _stop_all(started)
        if prometheus is not None:
            prometheus.stop()
        _clean(plan, client)
        client.close()
