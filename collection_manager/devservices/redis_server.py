"""A local ``redis-server`` on loopback with AOF persistence."""

from __future__ import annotations

import logging
import shutil
from collections.abc import Callable

from collection_manager.config import InfraConfig
from collection_manager.config.machine import SETUP_HINT
from collection_manager.config.services import Service
from collection_manager.core.errors import InfrastructureError
from collection_manager.devservices.processes import (
    LOOPBACK,
    choose_port,
    start_process,
    start_time,
    wait_until_ready,
)

logger = logging.getLogger(__name__)


def _nothing(_service: Service) -> None:
    pass


def require_redis_server() -> str:
    """The ``redis-server`` executable; a one-line error saying how to get it when missing."""
    found = shutil.which("redis-server")
    if found:
        return found
    raise InfrastructureError(
        f"redis-server was not found: {SETUP_HINT} as root, install it (Debian: "
        "apt-get install redis-server), or set CM_REDIS_URL to an existing Redis"
    )


def start_redis(config: InfraConfig, record: Callable[[Service], None] = _nothing) -> Service:
    """Starts Redis, waits until it answers PING, and returns its record.

    ``record`` gets the record as soon as the process exists, before it answers (see
    ``start_process``).
    """
    binary = require_redis_server()
    home = config.state_dir / "redis"
    home.mkdir(parents=True, exist_ok=True)
    port = choose_port(config.redis_port, home / "port", "Redis")
    log_path = home / "redis.log"
    cmd = [
        binary,
        "--bind",
        LOOPBACK,
        "--port",
        str(port),
        "--dir",
        str(home),
        "--appendonly",
        "yes",
        "--save",
        "",
        "--daemonize",
        "no",
    ]
    url = f"redis://{LOOPBACK}:{port}/0"

    def service(pid: int) -> Service:
        # redis-server rewrites its command line to "path host:port": match that.
        marker = f"{LOOPBACK}:{port}"
        return Service("redis", pid, url, str(log_path), marker, start_time(pid))

    pid = start_process(cmd, log_path, cwd=home, record=lambda pid: record(service(pid)))
    logger.info("started Redis (pid %d) at %s; log %s", pid, url, log_path)
    wait_until_ready(
        "redis-server", pid, log_path, lambda: redis_answers(url), config.startup_timeout_s
    )
    return service(pid)


def redis_answers(url: str, timeout_s: float = 1.0) -> bool:
    """Whether a Redis at ``url`` answers PING; for a URL naming several cluster nodes
    (``redis://a:1,b:2/0``), whether any of them does, as a client starts from any."""
    import redis

    from collection_manager.storage.client import node_urls

    try:
        nodes = node_urls(url)
    except ValueError:  # no valid URL: nothing there answers
        return False
    for node in nodes:
        try:
            client = redis.Redis.from_url(
                node, socket_timeout=timeout_s, socket_connect_timeout=timeout_s
            )
        except ValueError:
            return False
        try:
            if client.ping():
                return True
        except redis.RedisError:
            continue
        finally:
            client.close()
    return False
