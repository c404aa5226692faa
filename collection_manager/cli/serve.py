"""``collection-manager server run``: the read-only HTTP API and the console
(``collection_manager/http``) until SIGTERM or Ctrl-C (or ``--duration``)."""

from __future__ import annotations

import argparse
import signal
import threading
import time
from types import FrameType
from typing import Any

from collection_manager.cli.argtypes import seconds_argument
from collection_manager.config import (
    ConsumerConfig,
    HttpConfig,
    InfraConfig,
    ReplicaConfig,
    from_env,
    roles,
)
from collection_manager.config.services import running


def register(commands: Any) -> None:
    """Adds ``server run``."""
    server = commands.add_parser("server", help="the HTTP API and the console")
    runs = server.add_subparsers(dest="action", required=True)
    parser = runs.add_parser(
        "run",
        help="a read-only HTTP API of the collections, their rows and changes, the replicas "
        "and the status, and the console on it, until SIGTERM or Ctrl-C",
    )
    parser.add_argument(
        "--duration",
        type=seconds_argument,
        metavar="SECONDS",
        help="stop after this many seconds (default: until stopped)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    """Serves until a signal (exit 0) or ``--duration``."""
    roles.require("server run", "server")
    from collection_manager.http.service import start

    config = from_env(HttpConfig)
    infra = from_env(InfraConfig)
    endpoints = running(infra, needs=("redis",))
    service = start(
        config,
        endpoints.redis_url,
        endpoints.kafka_bootstrap,
        from_env(ConsumerConfig).topic,
        from_env(ReplicaConfig).replica_namespace,
        infra.services_file,
    )
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()  # the main thread stops the server: no lock is taken in a handler

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    try:
        print(ready_line(service.url), flush=True)
        deadline = None if args.duration is None else time.monotonic() + args.duration
        while not stop.wait(0.5):
            if deadline is not None and time.monotonic() >= deadline:
                break
    finally:
        service.close()
    return 0


def ready_line(url: str) -> str:
    """The line ``server run`` prints once it listens (scripts wait on it): the console's
    URL first, the one a person opens, then the API's and the health endpoints'."""
    return (
        f"serving the HTTP API and console at {url}/ (the API at {url}/api/v1/, described at "
        f"{url}/api/v1/openapi.json; metrics and health at /metrics, /healthz, /readyz)"
    )
