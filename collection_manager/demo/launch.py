"""The demo's processes started, each waited for until it works: the console (``server
run``), the Spark consumer, the simulated replica agents and the replica of real data.

Each listens on a free loopback port of its own; ``run.listeners`` records where, for the
checks before the verdict (``live_checks.py``).
"""

from __future__ import annotations

import time
import urllib.request

from collection_manager.core.filters import eq
from collection_manager.core.specs import Row
from collection_manager.demo.frames import Plan
from collection_manager.demo.options import DemoOptions
from collection_manager.demo.phases import DemoRun
from collection_manager.devservices.processes import LOOPBACK, free_port
from producers.sources.openmetrics import METRIC_SAMPLES

WORKERS = 4
REAL_REPLICA = "consumer-metrics"
"""The demo's replica of real data: the openmetrics source on the consumer's /metrics."""
DATAFLOWS_PER_SCALE = 8

# Beside the console's URL: how long it stays, and how to keep it.
STOPS_WITH_THE_DEMO = (
    "it stops with the demo; `collection-manager demo --keep` keeps it until Ctrl-C"
)
KEPT = "kept after the verdict until Ctrl-C"


def start_console(run: DemoRun, kept: bool) -> None:
    """``server run``, the read-only HTTP API and its web console, on a free loopback port: it
    reads the demo's Redis (and Kafka, for the lag) with the children's settings, and is
    stopped with them (``kept``: not before the demo is released after its verdict)."""
    run.phase = "starting the console (collection-manager server run)"
    address = loopback_address()
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


def start_consumer(run: DemoRun) -> None:
    run.phase = "starting the Spark consumer"
    launched = time.time()
    address = loopback_address()
    address_setting = {"CM_CONSUMER_METRICS_ADDRESS": address}
    child = run.children.spawn("consumer", ["consumer", "run"], address_setting)
    run.consumer = child
    run.listeners["consumer"] = f"http://{address}"
    run.wait_for(lambda: run.consumer_ran_after(launched), "the consumer's first micro-batch")
    run.event(f"Spark consumer running (pid {child.pid}), metrics at http://{address}/metrics")


def start_agents(run: DemoRun, options: DemoOptions, plan: Plan) -> None:
    run.phase = f"starting {len(plan.fates)} replica agents"
    dataflows = str(DATAFLOWS_PER_SCALE * options.scale)
    for replica in plan.fates:
        args = ["replicas", "run", "--id", replica, "--workers", str(WORKERS)]
        args += ["--dataflows", dataflows, "--steps", str(plan.steps)]
        args += ["--state-file", str(run.children.state_file(replica))]
        address = loopback_address()
        run.agents[replica] = run.children.spawn(
            replica, args, {"CM_AGENT_METRICS_ADDRESS": address}
        )
        run.listeners[replica] = f"http://{address}"
        run.event(f"{replica}: metrics at http://{address}/metrics")
    run.wait_for(run.all_visible, "every replica's heartbeat and rows in Redis")


def start_real_replica(run: DemoRun) -> None:
    """A replica whose data is real: the consumer's own ``/metrics``, scraped each step by
    the ``openmetrics`` source into ``metric_samples``, beside the simulated replicas."""
    run.phase = f"starting {REAL_REPLICA}, a replica of real data"
    target = run.listeners["consumer"] + "/metrics"
    args = ["replicas", "run", "--id", REAL_REPLICA, "--source", "openmetrics", "--target", target]
    run.real = run.children.spawn(REAL_REPLICA, args)
    run.wait_for(lambda: bool(real_samples(run)), f"{REAL_REPLICA}'s samples in Redis")
    run.event(f"{REAL_REPLICA}: scrapes {target} into {METRIC_SAMPLES} (real data)")


def real_samples(run: DemoRun) -> dict[Row, int]:
    """The real replica's rows in ``metric_samples`` (none while the collection is missing)."""
    collection = METRIC_SAMPLES + run.controller.config.collection_suffix
    if collection not in run.observer.store.collections():
        return {}
    return run.observer.store.snapshot(collection, eq("replica_id", REAL_REPLICA)).rows


def loopback_address() -> str:
    """A free port on loopback, for a listener of the demo's."""
    return f"{LOOPBACK}:{free_port()}"
