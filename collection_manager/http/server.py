"""The listener of ``serve``: the standard library's threading HTTP server, a thread per
connection, HTTP/1.1 with keep-alive and chunked answers.

Why this and not an ASGI stack: every read is a blocking redis-py call, and every answer a
loop over bounded steps; a thread per connection runs that loop as it is, and a socket
write that blocks is the back-pressure (a stream reads Redis for its next event only once
its client took the last one). An event loop would run the same reads in a thread pool,
and add a framework and a server to the dependencies. The costs, paid here: connections are
bounded (one more is closed at once), each socket has a timeout (a client that sends or
reads nothing for ``CM_HTTP_REQUEST_TIMEOUT_S`` is dropped), and a TLS handshake runs in
the connection's thread, never in the one that accepts.

Each request is one line of the log at INFO (``-v``): method, path without its query,
status, time; a failure is one line, never a traceback (``handle_error``).
"""

from __future__ import annotations

import contextlib
import errno
import json
import logging
import socket
import ssl
import threading
import time
from collections.abc import Iterable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from collection_manager.config.errors import ConfigError
from collection_manager.core.errors import CollectionManagerError
from collection_manager.http import metrics
from collection_manager.http.api import Api
from collection_manager.http.exchange import Answer, Request
from collection_manager.http.problems import MEDIA_TYPE
from collection_manager.observability.endpoint import parse_address

logger = logging.getLogger(__name__)

SETTING = "CM_HTTP_ADDRESS"
# Idle keep-alive connections beyond the answers running: they cost a thread each.
SPARE_CONNECTIONS = 64
# A request line or a header longer than this is refused (414, 431), as http.server does.
MAX_LINE = 65536
# How often the accept loop goes round (and tells the health that it does).
POLL_S = 0.5
# The methods metrics and logs name; any other is "other" (a label a client cannot grow).
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
# What a client that went away looks like while its answer is written.
_GONE = (ConnectionError, TimeoutError, ssl.SSLError, OSError)


class _Handler(BaseHTTPRequestHandler):
    """Parses each request of a connection, asks the API, writes its answer."""

    protocol_version = "HTTP/1.1"
    server_version = "collection-manager"
    sys_version = ""  # no Python version in the Server header
    server: ApiServer

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.socket_timeout_s)

    def handle_one_request(self) -> None:
        """As http.server's, but every method goes to :meth:`_serve` (the API answers 405
        for those it does not take), and a timeout ends the connection quietly."""
        try:
            self.raw_requestline = self.rfile.readline(MAX_LINE + 1)
            if len(self.raw_requestline) > MAX_LINE:
                self.requestline = self.request_version = self.command = ""
                self.send_error(HTTPStatus.REQUEST_URI_TOO_LONG)
                return
            if not self.raw_requestline:
                self.close_connection = True
                return
            if not self.parse_request():
                return
            self._serve()
        except _GONE:
            self.close_connection = True

    def _serve(self) -> None:
        arrived = time.monotonic()
        path, _, query = self.path.partition("?")
        headers = dict(self.headers.items())
        if self.headers.get("Content-Length", "0") not in ("", "0") or self.headers.get(
            "Transfer-Encoding"
        ):
            # The API reads no body: the connection cannot be reused past an unread one.
            self.close_connection = True
        request = Request(self.command, path, query.partition("#")[0], headers)
        answer = self.server.api.answer(request)
        try:
            self._write(answer, head_only=self.command == "HEAD", arrived=arrived)
        finally:
            close = getattr(answer.body, "close", None)
            if close is not None:
                close()  # a stream's generator: its own clean-up runs now
            if answer.finished is not None:
                answer.finished()
            method = self.command if self.command in _METHODS else "other"
            metrics.REQUESTS.labels(answer.route, method, str(answer.status)).inc()
            logger.info(
                "%s %s %d %.0f ms",
                method,
                path[:200],
                answer.status,
                (time.monotonic() - arrived) * 1000,
            )

    def _write(self, answer: Answer, head_only: bool, arrived: float) -> None:
        self.send_response(answer.status)
        self.send_header("Content-Type", answer.content_type)
        for name, value in answer.headers.items():
            self.send_header(name, value)
        if isinstance(answer.body, bytes):
            self.send_header("Content-Length", str(len(answer.body)))
            self.end_headers()
            if not head_only:
                self.wfile.write(answer.body)
            metrics.DURATION.labels(answer.route).observe(time.monotonic() - arrived)
            return
        chunked = self.request_version == "HTTP/1.1"
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        else:  # an HTTP/1.0 client reads to the end of the connection
            self.send_header("Connection", "close")
            self.close_connection = True
        self.end_headers()
        self.wfile.flush()
        stream = answer.route.endswith("/changes")
        if stream:
            metrics.DURATION.labels(answer.route).observe(time.monotonic() - arrived)
        if head_only:
            return
        self._write_chunks(answer.body, chunked)
        if not stream:
            metrics.DURATION.labels(answer.route).observe(time.monotonic() - arrived)

    def _write_chunks(self, body: Iterable[bytes], chunked: bool) -> None:
        """Each part as it comes, flushed: a write that blocks holds the producer back.

        A part that cannot be made (a streamed read that failed after its first step) ends
        the answer without its last chunk: its status is sent, and a client must not take
        what came for the whole. The log says why, in one line.
        """
        parts = iter(body)
        while True:
            try:
                part = next(parts, None)
            except Exception as exc:
                self.close_connection = True
                path = self.path.partition("?")[0][:200]
                logger.warning(
                    "%s %s: the answer was cut short: %s", self.command, path, _reason(exc)
                )
                return
            if part is None:
                break
            if not part:
                continue
            if chunked:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(part), part))
            else:
                self.wfile.write(part)
            self.wfile.flush()
        if chunked:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """A request that does not parse (http.server's own refusals) as a problem too."""
        status = HTTPStatus(code)
        document = {
            "type": "about:blank",
            "title": status.phrase,
            "status": code,
            "detail": message or status.description,
        }
        body = json.dumps(document).encode() + b"\n"
        self.close_connection = True
        with contextlib.suppress(*_GONE):
            self.send_response(code, message)
            self.send_header("Content-Type", MEDIA_TYPE)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Connection", "close")
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request's one line is _serve's


def _reason(exc: Exception) -> str:
    # Our errors say what went wrong and hold no secret; another's type is enough.
    if isinstance(exc, CollectionManagerError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__


class ApiServer(ThreadingHTTPServer):
    """The API at ``address``, serving from :meth:`start` until :meth:`close`.

    Args:
        address: ``host:port`` (port 0: any free one).
        api: what answers.
        tls: the TLS context, or None for plain HTTP.
        socket_timeout_s: how long a connection may send or read nothing.
        max_connections: the most connections at once; one more is closed at once.

    Raises:
        ConfigError: when the address is no host:port, is taken, or cannot be bound.
    """

    daemon_threads = True
    block_on_close = False

    def __init__(
        self,
        address: str,
        api: Api,
        tls: ssl.SSLContext | None,
        socket_timeout_s: float,
        max_connections: int,
    ) -> None:
        host, port = parse_address(address, SETTING)
        self.api, self.tls = api, tls
        self.socket_timeout_s, self.max_connections = socket_timeout_s, max_connections
        self._connections = 0
        self._count_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        if ":" in host:
            self.address_family = socket.AF_INET6
        try:
            super().__init__((host, port), _Handler)
        except OSError as exc:
            why = "the address is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
            raise ConfigError(f"{SETTING}={address}: cannot listen there: {why}") from None
        self.host, self.port = host, int(self.server_address[1])

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> ApiServer:
        """Serves from a thread of its own."""
        self._thread = threading.Thread(
            target=self.serve_forever, args=(POLL_S,), name="http-accept", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops accepting, ends the change streams, closes the listener."""
        self.api.stopping.set()
        if self._thread is not None:
            self.shutdown()
            self._thread.join(timeout=5)
        self.server_close()

    def service_actions(self) -> None:
        self.api.health.beat("http")  # the accept loop went round

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._count_lock:
            full = self._connections >= self.max_connections
            if not full:
                self._connections += 1
        if full:
            metrics.CONNECTIONS_REFUSED.inc()
            self.shutdown_request(request)
            return
        super().process_request(request, client_address)

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            if self.tls is not None:
                request.settimeout(self.socket_timeout_s)
                request = self.tls.wrap_socket(request, server_side=True)
            self.finish_request(request, client_address)
        except _GONE as exc:
            logger.debug("connection from %s ended: %s", client_address[0], type(exc).__name__)
        except Exception as exc:
            self.handle_error(request, client_address, exc)
        finally:
            self.shutdown_request(request)
            with self._count_lock:
                self._connections -= 1

    def handle_error(self, request: Any, client_address: Any, exc: Any = None) -> None:
        """One line, no traceback (socketserver's default prints one to stderr)."""
        logger.warning("a connection from %s failed: %s", client_address[0], type(exc).__name__)
