"""``controller run``: the controller's lease loop; and the controller every ``replicas``
command connects from the environment (``cli/replicas.py``, ``cli/replica_agent.py``)."""

from __future__ import annotations

import argparse
import threading
from typing import Any

from collection_manager import devservices
from collection_manager.cli.signals import stop_on_signals
from collection_manager.config import ConsumerConfig, InfraConfig, ReplicaConfig, from_env
from collection_manager.control.controller import Controller
from collection_manager.observability.endpoint import Endpoint, parse_address
from collection_manager.storage.replication import Durability


def register(commands: Any) -> None:
    """Adds ``controller``."""
    controller = commands.add_parser("controller", help="the controller's lease loop")
    loops = controller.add_subparsers(dest="action", required=True)
    loop = loops.add_parser(
        "run", help="remove replicas whose lease expired, until SIGTERM or Ctrl-C"
    )
    loop.add_argument(
        "--duration", type=float, help="stop after this many seconds (default: run until stopped)"
    )
    loop.set_defaults(run=run_controller)


def connect_controller(endpoints: devservices.Endpoints) -> Controller:
    """The controller of the configured topic and replica namespace."""
    consumer = from_env(ConsumerConfig)
    return Controller.connect(
        endpoints.kafka_bootstrap,
        endpoints.redis_url,
        consumer.topic,
        from_env(ReplicaConfig),
        Durability.of(consumer),
    )


def check_address(address: str, setting: str) -> None:
    """A listen address that is no host:port is refused before anything connects."""
    if address:
        parse_address(address, setting)


def run_controller(args: argparse.Namespace) -> int:
    """Runs the lease loop until SIGTERM/SIGINT (or ``--duration``)."""
    from collection_manager.control.service import METRICS_SETTING, run_service

    check_address(from_env(ReplicaConfig).controller_metrics_address, METRICS_SETTING)
    endpoints = devservices.running(from_env(InfraConfig))
    controller = connect_controller(endpoints)
    config = controller.config

    def started(endpoint: Endpoint | None) -> None:
        print(
            f"controller: leases of {config.replica_ttl_ms} ms, "
            f"checked every {config.lease_check_interval_ms} ms"
            + ("" if endpoint is None else f"; metrics and health at {endpoint.url}"),
            flush=True,
        )

    stop = stop_on_signals()
    timer = threading.Timer(args.duration or 0, stop.set)
    if args.duration is not None:
        timer.start()
    try:
        run_service(controller, endpoints.redis_url, stop, started)
    finally:
        timer.cancel()
    return 0
