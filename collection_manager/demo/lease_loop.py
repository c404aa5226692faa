"""The demo's own controller at work: its lease loop in a thread, the heartbeat ``controller
run`` keeps, and the controller's metrics listener (the demo is the controller's process)."""

from __future__ import annotations

import contextlib
import logging
import threading

from collection_manager.control import metrics as controller_metrics
from collection_manager.demo.launch import loopback_address
from collection_manager.demo.phases import DemoRun
from collection_manager.observability.endpoint import Endpoint
from collection_manager.observability.health import Health, recent
from collection_manager.storage.heartbeats import CONTROLLER, Heartbeat


def start_lease_loop(run: DemoRun, stack: contextlib.ExitStack, redis_url: str) -> None:
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
        loopback_address(), "the demo's controller listener", controller_metrics.REGISTRY, health
    )
    stack.callback(endpoint.close)
    run.listeners["controller"] = endpoint.url
    ttl = run.controller.config.replica_ttl_ms / 1000
    run.event(
        f"controller: lease loop running, leases of {ttl:.0f}s, metrics at {endpoint.url}/metrics"
    )


def _narrated_not_logged(stack: contextlib.ExitStack, name: str) -> None:
    """Errors only from logger ``name`` until ``stack`` unwinds.

    The lease the demo lets expire is a planned event, told by its own narrated line
    ("controller: demo-r3's lease expired, removed ..."); the controller's WARNING of it,
    right for an operator's controller, would print raw in the middle of the view.
    """
    logger = logging.getLogger(name)
    stack.callback(logger.setLevel, logger.level)
    logger.setLevel(logging.ERROR)


def _stop_thread(stop: threading.Event, thread: threading.Thread) -> None:
    stop.set()
    thread.join(10)
