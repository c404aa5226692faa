"""The controller's service loop, as ``controller run`` runs it: its metrics and health
served, its heartbeat beating, and the lease checks until stopped (as the consumer's loop
lives in ``spark_consumers/``)."""

from __future__ import annotations

import threading
from collections.abc import Callable

from collection_manager.control import metrics as controller_metrics
from collection_manager.control.controller import Controller
from collection_manager.core.errors import CollectionManagerError
from collection_manager.observability.endpoint import Endpoint, serve
from collection_manager.observability.health import Health, recent
from collection_manager.storage.heartbeats import CONTROLLER, Heartbeat

METRICS_SETTING = "CM_CONTROLLER_METRICS_ADDRESS"


def _health(controller: Controller) -> Health:
    """A loop watched and a check that the lease checks are recent, by their interval."""
    interval_s = controller.config.lease_check_interval_ms / 1000
    health = Health()
    health.watch_loop("leases", max_age_s=max(60.0, 10 * interval_s))
    health.add_check(
        "leases", recent("lease check", lambda: controller.last_check_ms, max(30.0, 5 * interval_s))
    )
    return health


def run_service(
    controller: Controller,
    redis_url: str,
    stop: threading.Event,
    started: Callable[[Endpoint | None], None] = lambda endpoint: None,
) -> None:
    """Serves ``controller``'s metrics and health (``CM_CONTROLLER_METRICS_ADDRESS``; none
    when empty), beats its heartbeat and checks leases until ``stop`` is set; closes the
    controller however it ends. ``started`` is told the endpoint once it is served.

    Raises:
        CollectionManagerError: when the metrics address cannot be listened on.
    """
    health = _health(controller)
    try:
        endpoint = serve(
            controller.config.controller_metrics_address,
            METRICS_SETTING,
            controller_metrics.REGISTRY,
            health,
        )
    except CollectionManagerError:
        controller.close()
        raise
    started(endpoint)
    heartbeat = Heartbeat(
        redis_url,
        CONTROLLER,
        controller.config.replica_namespace,
        lambda: {"last_check_ms": controller.last_check_ms},
    ).start()
    try:
        controller.run_leases(stop, went_round=lambda: health.beat("leases"))
    finally:
        heartbeat.stop()
        if endpoint is not None:
            endpoint.close()
        controller.close()
