"""The demonstration: the product end to end, with one replica removed and one killed.

``run_demo`` starts (or reuses) Kafka and Redis, the Spark consumer as its own process, and
one ``collection-manager replicas run`` process per replica agent; the demo's own controller
runs the lease loop, and ``collection-manager server run`` answers the HTTP API and the web
console, whose URL the demo prints first: the console shows the demo's fleet live. Once
every replica's rows are in Redis, the controller removes one replica (a fenced delete
retracts its rows at once) and the demo SIGKILLs another's agent (its rows stay until its
lease expires and the lease check removes it). The survivors publish a fixed number of
steps and then write what they hold to a state file. Once the consumer has applied
everything Kafka held by then, Redis is compared with those files, and the removed and
killed replicas with nothing. Whatever the demo started, it stops.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import logging
import os
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import AdminClient, NewTopic

from collection_manager import devservices
from collection_manager.config import (
    ConsumerConfig,
    InfraConfig,
    ReplicaConfig,
    env_name,
    from_env,
)
from collection_manager.control import metrics as controller_metrics
from collection_manager.control.controller import Controller, ReplicaStatus
from collection_manager.core.filters import eq
from collection_manager.core.requests import Delete
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.demo.children import Children
from collection_manager.demo.frames import Frame, Plan
from collection_manager.demo.observe import Observer
from collection_manager.demo.phases import DemoError, DemoRun, Reporter
from collection_manager.demo.verify import Verification, verify
from collection_manager.devservices.processes import LOOPBACK, free_port
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.kafka.security import from_environment
from collection_manager.observability.endpoint import Endpoint
from collection_manager.observability.health import Health, recent
from collection_manager.storage.client import redis_client
from collection_manager.storage.heartbeats import CONTROLLER, Heartbeat
from collection_manager.storage.replication import Durability
from collection_manager.storage.store import RedisStore
from producers.agent import load_state
from producers.routing import messages_for
from producers.sources.openmetrics import METRIC_SAMPLES, SCRAPE_STATUS
from schemas.introspection import introspection_specs

WORKERS = 4
REAL_REPLICA = "consumer-metrics"
"""The demo's replica of real data: the openmetrics source on the consumer's /metrics."""
DATAFLOWS_PER_SCALE = 8


@dataclasses.dataclass(frozen=True)
class DemoOptions:
    """How big and how long.

    Attributes:
        duration_s: about how long the replicas publish changes (at least 10 s).
        scale: rows per replica grow with it: ``8 * scale`` dataflows on 4 workers each.
        replicas: replica agents, at least 3 (one is removed, one killed).
        timeout_s: how long any one wait may take (consumer start, catching up, ...).
        step_interval_ms: time between two changes of an agent.
        heartbeat_interval_ms: time between two heartbeats of an agent.
        lease_ttl_ms: a replica without a heartbeat for this long is removed. A lease is
            renewed only once the consumer applied a heartbeat, so it must outlast the
            slowest micro-batch on a busy machine (seconds), yet let the killed replica go
            well within the demo.
        row_ttl_ms: TTL of the agents' error and hydration rows (``CM_ROW_TTL_MS``):
            shorter than the lease, so the killed replica's rows go first one by one.
    """

    duration_s: float = 30.0
    scale: int = 1
    replicas: int = 3
    timeout_s: float = 120.0
    step_interval_ms: int = 500
    heartbeat_interval_ms: int = 500
    lease_ttl_ms: int = 8_000
    row_ttl_ms: int = 3_000

    def replica_config(self) -> ReplicaConfig:
        """The ``CM_*`` replica settings with the demo's short intervals and lease."""
        return dataclasses.replace(
            from_env(ReplicaConfig),
            replica_ttl_ms=self.lease_ttl_ms,
            heartbeat_interval_ms=self.heartbeat_interval_ms,
            lease_check_interval_ms=min(250, self.lease_ttl_ms // 4),
            step_interval_ms=self.step_interval_ms,
            row_ttl_ms=self.row_ttl_ms,
        )


@dataclasses.dataclass(frozen=True)
class DemoResult:
    """What the demo found.

    Attributes:
        plan: the replicas and their fates.
        verification: the verdict, per collection.
        stored: replica -> collection -> its rows in Redis at the end.
        held: survivor -> collection -> the rows its agent holds.
        statuses: replica -> the controller's record of it at the end.
        events: what happened, in order.
    """

    plan: Plan
    verification: Verification
    stored: dict[str, dict[str, Counter[Row]]]
    held: dict[str, dict[str, Counter[Row]]]
    statuses: dict[str, ReplicaStatus]
    events: tuple[str, ...]

    @property
    def verified(self) -> bool:
        """Whether Redis holds exactly what it must."""
        return self.verification.ok


@dataclasses.dataclass(frozen=True)
class Keep:
    """``demo --keep``: after the verdict, ``shown(result)`` once (the CLI prints the
    verdict), then every process and the console run on until ``released()`` holds or
    Ctrl-C; only then does the demo stop what it started."""

    shown: Callable[[DemoResult], None]
    released: Callable[[], bool] = lambda: False


def run_demo(options: DemoOptions, reporter: Reporter, keep: Keep | None = None) -> DemoResult:
    """Runs the demo and returns its verdict; stops everything it started, also on errors,
    at once after the verdict, or with ``keep`` once it is released.

    Raises:
        ValueError: for fewer than 3 replicas or a duration under 10 s.
        DemoError: when a process died or a wait timed out.
    """
    plan = Plan.of(options.replicas, options.duration_s, options.step_interval_ms)
    infra_config = demo_infra(from_env(InfraConfig))
    started = time.monotonic()
    reporter.show(Frame(0.0, "starting Kafka and Redis"))
    with contextlib.ExitStack() as stack:
        endpoints = devservices.up(infra_config)
        stack.callback(devservices.down, infra_config, endpoints.started)
        run = _open(stack, options, plan, reporter, infra_config, endpoints, started)
        _start_console(run, kept=keep is not None)
        _start_consumer(run)
        _start_agents(run, options, plan)
        _start_real_replica(run)
        _start_lease_loop(run, stack, endpoints.redis_url)
        run.play()
        result = _verdict(run, plan)
        if keep is not None:
            keep.shown(result)
            run.hold(keep.released)
        return result


def demo_infra(infra: InfraConfig) -> InfraConfig:
    """The demo's own state directory, ``<state dir>/demo``: the Kafka and Redis it starts
    keep their data there, so a later ``infra up`` starts clean, without the demo's batches
    and replicas (configured services, CM_KAFKA_BOOTSTRAP / CM_REDIS_URL, are used as
    they are)."""
    return dataclasses.replace(infra, state_dir=infra.state_dir / "demo")


def _open(
    stack: contextlib.ExitStack,
    options: DemoOptions,
    plan: Plan,
    reporter: Reporter,
    infra_config: InfraConfig,
    endpoints: devservices.Endpoints,
    started: float,
) -> DemoRun:
    """The clients and the run's state; each is closed when ``stack`` unwinds."""
    # Its own checkpoint even when CM_CHECKPOINT_DIR is set: never an operator's consumer's.
    consumer_config = dataclasses.replace(
        from_env(ConsumerConfig), checkpoint_dir=None
    ).with_checkpoint(infra_config, query="demo")
    replica_config = options.replica_config()
    # Its views read before the consumer it starts has loaded this version's functions.
    store = RedisStore.connect(endpoints.redis_url, load_functions=True)
    producer = KafkaProducer(ProducerConfig(endpoints.kafka_bootstrap, "cm-demo-controller"))
    client = redis_client(endpoints.redis_url, socket_connect_timeout=5)
    # The consumer's barrier for its epochs and member records too (CM_REDIS_REPLICA_ACKS):
    # on a Redis with replicas, a failover must not hand out one epoch twice.
    durability = Durability.of(consumer_config)
    controller = Controller(
        producer, client, consumer_config.topic, replica_config, durability=durability
    )
    stack.callback(_close_controller, controller, producer)
    _ensure_collections(store, replica_config.collection_suffix)
    _ensure_topic(endpoints.kafka_bootstrap, consumer_config.topic)
    specs = controller.collection_specs(controller.collections)
    _clear_earlier_runs(producer, consumer_config.topic, list(specs.values()), plan)
    assert consumer_config.checkpoint_dir is not None  # with_checkpoint set it
    observer = Observer(
        store,
        controller,
        endpoints.redis_url,
        endpoints.kafka_bootstrap,
        consumer_config.topic,
        Path(consumer_config.checkpoint_dir),
        controller.collections,
    )
    stack.callback(observer.close)
    env = _child_env(endpoints, consumer_config, replica_config)
    env[env_name("state_dir")] = str(infra_config.state_dir)  # the children's scratch too
    children = Children(infra_config.state_dir / "logs", env)
    # Stopped before the services go down: the agents say goodbye through Kafka.
    stack.callback(children.stop)
    return DemoRun(plan, reporter, observer, controller, children, options.timeout_s, started)


def _close_controller(controller: Controller, producer: KafkaProducer) -> None:
    controller.close()  # flushes
    # Frees the librdkafka client now: alive until collected, it would print failed
    # reconnects to the broker the demo stops next.
    producer.producer.close()


def _ensure_collections(store: RedisStore, suffix: str) -> None:
    existing = set(store.collections())
    for spec in introspection_specs():
        if spec.name + suffix not in existing:
            store.create_collection(dataclasses.replace(spec, name=spec.name + suffix))


def _ensure_topic(bootstrap: str, topic: str) -> None:
    """Creates the requests topic with the broker's defaults unless it exists.

    The consumer fails on a topic that does not exist yet, and the agents may start after it.
    """
    # Warnings and errors only: its informational lines would print across the live view.
    admin = AdminClient({**from_environment().client_settings(bootstrap), "log_level": 4})
    try:
        admin.create_topics([NewTopic(topic)])[topic].result(30)
    except KafkaException as exc:
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise DemoError(f"cannot create the topic: {exc}", topic=topic) from exc


def _clear_earlier_runs(
    producer: KafkaProducer, topic: str, collections: Sequence[CollectionSpec], plan: Plan
) -> None:
    """Retracts rows the demo's replica ids hold from before, whoever published them.

    The controller retracts an incarnation it knows when the replica is added again, but
    rows published without it (an older demo, a test) would stay and fail the comparison.
    Keyed by their unit (the collection, or in one bucketed by ``replica_id`` the replica's
    bucket) and sent to its partition, these deletes precede every append of this run there.
    """
    for replica in plan.fates:
        for spec in collections:
            delete = Delete(spec.name, eq("replica_id", replica), "demo: rows of an earlier run")
            for message in messages_for(delete, spec):
                producer.produce(topic, message.key, message.value, partition=message.partition)
    if producer.flush(30):
        raise DemoError("the demo's clean-up deletes were not acknowledged", topic=topic)


def _child_env(
    endpoints: devservices.Endpoints, consumer: ConsumerConfig, replicas: ReplicaConfig
) -> dict[str, str]:
    """The environment of every child: the demo's services and exactly its settings."""
    env = dict(os.environ)
    env[env_name("kafka_bootstrap")] = endpoints.kafka_bootstrap
    env[env_name("redis_url")] = endpoints.redis_url
    for config in (consumer, replicas):
        for name, value in dataclasses.asdict(config).items():
            env[env_name(name)] = "" if value is None else str(value)
    return env


# Beside the console's URL: how long it stays, and how to keep it.
STOPS_WITH_THE_DEMO = (
    "it stops with the demo; `collection-manager demo --keep` keeps it until Ctrl-C"
)
KEPT = "kept after the verdict until Ctrl-C"


def _start_console(run: DemoRun, kept: bool) -> None:
    """``server run``, the read-only HTTP API and its web console, on a free loopback port: it
    reads the demo's Redis (and Kafka, for the lag) with the children's settings, and is
    stopped with them (``kept``: not before the demo is released after its verdict)."""
    run.phase = "starting the console (collection-manager server run)"
    address = _loopback_address()
    run.serve = run.children.spawn("serve", ["server", "run"], {"CM_HTTP_ADDRESS": address})
    url = f"http://{address}"
    run.listeners["serve"] = url
    run.wait_for(lambda: _answers(url + "/healthz"), "the console's first answer")
    run.console = url + "/"
    run.console_note = KEPT if kept else STOPS_WITH_THE_DEMO
    pid = run.serve.pid
    run.event(
        f"console: open {run.console} (server, pid {pid}): the fleet live; {run.console_note}"
    )


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as reply:
            return bool(reply.status == 200)
    except OSError:
        return False


def _check_console(run: DemoRun, plan: Plan) -> None:
    """The console's page is served, and the API it reads lists every survivor and shows
    the consumer and the controller running.

    Raises:
        DemoError: when one does not answer, or says otherwise.
    """
    url = run.listeners["serve"]
    try:
        with urllib.request.urlopen(url + "/", timeout=5) as reply:
            page = reply.read().decode()
        with urllib.request.urlopen(url + "/api/v1/replicas", timeout=5) as reply:
            answer = json.loads(reply.read())
        shown = {replica["replica_id"] for replica in answer["replicas"]}
        with urllib.request.urlopen(url + "/api/v1/status", timeout=10) as reply:
            status = json.loads(reply.read())
        states = {kind: status[kind]["state"] for kind in ("consumer", "controller")}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise DemoError(f"the console at {url} did not answer: {exc!r}") from exc
    if "console.js" not in page:
        raise DemoError(f"the console at {url}/ is not the console's page")
    missing = set(plan.survivors) - shown
    if missing:
        raise DemoError(f"the console's {url}/api/v1/replicas lacks {sorted(missing)}")
    if set(states.values()) != {"running"}:
        raise DemoError(f"the console's {url}/api/v1/status shows {states}")
    run.event(
        f"console: its page, the fleet's {len(shown)} live replicas and the consumer and "
        "controller running answered"
    )


def _start_consumer(run: DemoRun) -> None:
    run.phase = "starting the Spark consumer"
    launched = time.time()
    address = _loopback_address()
    address_setting = {"CM_CONSUMER_METRICS_ADDRESS": address}
    child = run.children.spawn("consumer", ["consumer", "run"], address_setting)
    run.consumer = child
    run.listeners["consumer"] = f"http://{address}"
    run.wait_for(lambda: run.consumer_ran_after(launched), "the consumer's first micro-batch")
    run.event(f"Spark consumer running (pid {child.pid}), metrics at http://{address}/metrics")


def _start_agents(run: DemoRun, options: DemoOptions, plan: Plan) -> None:
    run.phase = f"starting {len(plan.fates)} replica agents"
    dataflows = str(DATAFLOWS_PER_SCALE * options.scale)
    for replica in plan.fates:
        args = ["replicas", "run", "--id", replica, "--workers", str(WORKERS)]
        args += ["--dataflows", dataflows, "--steps", str(plan.steps)]
        args += ["--state-file", str(run.children.state_file(replica))]
        address = _loopback_address()
        run.agents[replica] = run.children.spawn(
            replica, args, {"CM_AGENT_METRICS_ADDRESS": address}
        )
        run.listeners[replica] = f"http://{address}"
        run.event(f"{replica}: metrics at http://{address}/metrics")
    run.wait_for(run.all_visible, "every replica's heartbeat and rows in Redis")


def _start_real_replica(run: DemoRun) -> None:
    """A replica whose data is real: the consumer's own ``/metrics``, scraped each step by
    the ``openmetrics`` source into ``metric_samples``, beside the simulated replicas."""
    run.phase = f"starting {REAL_REPLICA}, a replica of real data"
    target = run.listeners["consumer"] + "/metrics"
    args = ["replicas", "run", "--id", REAL_REPLICA, "--source", "openmetrics", "--target", target]
    run.real = run.children.spawn(REAL_REPLICA, args)
    run.wait_for(lambda: bool(_real_samples(run)), f"{REAL_REPLICA}'s samples in Redis")
    run.event(f"{REAL_REPLICA}: scrapes {target} into {METRIC_SAMPLES} (real data)")


def _real_samples(run: DemoRun) -> dict[Row, int]:
    collection = METRIC_SAMPLES + run.controller.config.collection_suffix
    if collection not in run.observer.store.collections():
        return {}
    return run.observer.store.snapshot(collection, eq("replica_id", REAL_REPLICA)).rows


def _check_real_replica(run: DemoRun) -> None:
    """Its samples are in Redis and it still scrapes, or the demo failed."""
    status = SCRAPE_STATUS + run.controller.config.collection_suffix
    rows = list(run.observer.store.snapshot(status, eq("replica_id", REAL_REPLICA)).rows)
    samples = _real_samples(run)
    if not samples or len(rows) != 1 or rows[0][2] is not True:
        raise DemoError(f"{REAL_REPLICA}: {len(samples)} samples, scrape status {rows}")
    run.event(f"{REAL_REPLICA}: {len(samples)} samples of the consumer's /metrics, scrape up")


def _narrated_not_logged(stack: contextlib.ExitStack, name: str) -> None:
    """Errors only from logger ``name`` until ``stack`` unwinds.

    The lease the demo lets expire is a planned event, told by its own narrated line
    ("controller: demo-r3's lease expired, removed ..."); the controller's WARNING of it,
    right for an operator's controller, would print raw in the middle of the view.
    """
    logger = logging.getLogger(name)
    stack.callback(logger.setLevel, logger.level)
    logger.setLevel(logging.ERROR)


def _start_lease_loop(run: DemoRun, stack: contextlib.ExitStack, redis_url: str) -> None:
    """The controller's lease loop, in a thread until the demo ends, with the heartbeat
    ``controller run`` keeps (``status`` and the console show the controller running).

    Started once every heartbeat reaches the controller, so that no replica's lease runs
    out while the consumer was still starting.
    """
    _narrated_not_logged(stack, "collection_manager.control.controller")
    stop = threading.Event()
    health = Health()
    health.watch_loop("leases", max_age_s=60.0)
    health.add_check("leases", recent("lease check", lambda: run.controller.last_check_ms, 30.0))
    loop = threading.Thread(
        target=run.controller.run_leases,
        args=(stop,),
        kwargs={"went_round": lambda: health.beat("leases")},
        daemon=True,
    )
    loop.start()
    stack.callback(_stop_thread, stop, loop)
    heartbeat = Heartbeat(
        redis_url,
        CONTROLLER,
        run.controller.config.replica_namespace,
        lambda: {"last_check_ms": run.controller.last_check_ms},
    )
    stack.callback(heartbeat.start().stop)
    # The demo is the controller's process: it serves the controller's metrics.
    endpoint = Endpoint(
        _loopback_address(), "the demo's controller listener", controller_metrics.REGISTRY, health
    )
    stack.callback(endpoint.close)
    run.listeners["controller"] = endpoint.url
    ttl = run.controller.config.replica_ttl_ms / 1000
    run.event(
        f"controller: lease loop running, leases of {ttl:.0f}s, metrics at {endpoint.url}/metrics"
    )


# A family each kind of process serves: its /metrics is the process' own.
_FAMILIES = {
    "consumer": "cm_consumer_batches_total",
    "controller": "cm_controller_lease_checks_total",
}


def _scrape_listeners(run: DemoRun, names: Sequence[str]) -> None:
    """Asks each live process' /metrics and /readyz once, as Prometheus and a probe would.

    Raises:
        DemoError: when one does not answer, or its metrics lack its own families.
    """
    for name in names:
        url = run.listeners[name]
        family = _FAMILIES.get(name, "cm_agent_requests_delivered_total")
        try:
            with urllib.request.urlopen(url + "/metrics", timeout=5) as reply:
                metrics = reply.read().decode()
            with urllib.request.urlopen(url + "/readyz", timeout=5) as reply:
                ready = reply.read().decode().strip()
        except OSError as exc:
            raise DemoError(f"the {name}'s listener at {url} did not answer: {exc}") from exc
        if family not in metrics:
            raise DemoError(f"the {name}'s /metrics at {url} lacks {family}")
        run.event(f"{name}: /metrics has {family}, /readyz says {ready}")


def _loopback_address() -> str:
    """A free port on loopback, for a listener of the demo's."""
    return f"{LOOPBACK}:{free_port()}"


def _stop_thread(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(10)


def _verdict(run: DemoRun, plan: Plan) -> DemoResult:
    _scrape_listeners(run, ["consumer", "controller", *plan.survivors])
    _check_real_replica(run)
    _check_console(run, plan)
    stored = run.observer.replica_rows(plan.fates)
    held = {replica: load_state(run.children.state_file(replica)) for replica in plan.survivors}
    verification = verify(stored, held, [plan.removed, plan.killed])
    run.phase = "verified" if verification.ok else "MISMATCH"
    run.refresh()
    return DemoResult(plan, verification, stored, held, run.observer.statuses(), tuple(run.events))
