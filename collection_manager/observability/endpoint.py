"""One HTTP listener per process: ``/metrics`` (Prometheus), ``/healthz`` and ``/readyz``.

``/metrics`` is prometheus_client's exposition of the process' registry. ``/healthz`` and
``/readyz`` answer 200 ``ok`` or 503 with one reason per line (``health.py``), as Kubernetes
probes and Docker HEALTHCHECKs read them. Anything else is 404. The listener serves from
daemon threads and never writes to the process' log (probes come every few seconds).
"""

from __future__ import annotations

import errno
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from prometheus_client import (
    CONTENT_TYPE_LATEST,
    GC_COLLECTOR,
    PLATFORM_COLLECTOR,
    PROCESS_COLLECTOR,
    CollectorRegistry,
    generate_latest,
)

from collection_manager.config.errors import ConfigError
from collection_manager.observability.health import Health


def parse_address(address: str, setting: str) -> tuple[str, int]:
    """``host:port`` (port 0: any free one) as a pair.

    Raises:
        ConfigError: naming ``setting`` when it is no ``host:port`` with a port in 0..65535.
    """
    host, colon, port = address.rpartition(":")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(
            f"{setting}={address!r}: expected host:port with a port from 0 to 65535 "
            "(e.g. 127.0.0.1:9400)"
        )
    return host.strip("[]"), int(port)


def process_registry() -> CollectorRegistry:
    """A registry of one kind of process' own metrics, with the standard ``process_*`` and
    ``python_*`` families. Every command is one program that imports every module, so the
    default registry would show a consumer the controller's metrics too."""
    registry = CollectorRegistry()
    for collector in (PROCESS_COLLECTOR, PLATFORM_COLLECTOR, GC_COLLECTOR):
        registry.register(collector)
    return registry


def serve(
    address: str, setting: str, registry: CollectorRegistry, health: Health
) -> Endpoint | None:
    """The process' listener at ``address`` (the value of ``setting``); None when empty."""
    return Endpoint(address, setting, registry, health) if address else None


class Endpoint:
    """The process' listener, serving until :meth:`close`.

    Raises:
        ConfigError: when the address is taken or cannot be bound, naming ``setting``.
    """

    def __init__(
        self, address: str, setting: str, registry: CollectorRegistry, health: Health
    ) -> None:
        host, port = parse_address(address, setting)
        handler = type("Handler", (_Handler,), {"registry": registry, "health": health})
        try:
            self._server = ThreadingHTTPServer((host, port), handler)
        except OSError as exc:
            why = "the address is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ConfigError(f"{setting}={address}: cannot listen there: {why}") from None
        self._server.daemon_threads = True
        self.host, self.port = host, int(self._server.server_address[1])
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="metrics-endpoint", daemon=True
        )
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)


class _Handler(BaseHTTPRequestHandler):
    registry: CollectorRegistry
    health: Health

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._reply(200, generate_latest(self.registry), CONTENT_TYPE_LATEST)
        elif path in ("/healthz", "/readyz"):
            reasons = self.health.liveness() if path == "/healthz" else self.health.readiness()
            text = "\n".join(reasons) if reasons else "ok"
            self._reply(503 if reasons else 200, f"{text}\n".encode(), "text/plain; charset=utf-8")
        else:
            self._reply(404, b"not found: try /metrics, /healthz or /readyz\n", "text/plain")

    def _reply(self, status: int, body: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # probes every few seconds would drown the process' own log
