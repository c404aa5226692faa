"""The listener of ``server run``: the API's Starlette application (``app.py``) served by
uvicorn, in a thread of its own, on a socket bound before it starts (so that a taken
address is one line naming the setting, and port 0 is known at once).

uvicorn holds the connections (at most the requests served at once plus some idle
keep-alive ones), TLS when it is given, and the health beat of ``/healthz`` (its main loop
going round). Its own lines for what the application already says in one line, or must
never print (a traceback), are left out.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import socket
import threading
import time
from pathlib import Path

import uvicorn

from collection_manager.config.errors import ConfigError
from collection_manager.http.api import Api
from collection_manager.http.app import SPARE_CONNECTIONS, Application
from collection_manager.observability.endpoint import parse_address

SETTING = "CM_HTTP_ADDRESS"
# How long start() waits for uvicorn to listen, and close() for it to end.
_START_S, _STOP_S = 30.0, 10.0


class _Quiet(logging.Filter):
    """uvicorn's own lines for what the application already says in one line (a stream cut
    short: ``response.py``) or must never print (a traceback): left out."""

    _LEFT_OUT = ("Exception in ASGI application", "ASGI callable returned without completing")

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith(self._LEFT_OUT)


class ApiServer:
    """The API at ``address``, serving from :meth:`start` until :meth:`close`.

    Args:
        address: ``host:port`` (port 0: any free one).
        api: what answers.
        tls: the certificate and key files (PEM), or None for plain HTTP.
        socket_timeout_s: how long a client may take nothing of an answer.
        keepalive_s: how long an idle connection stays open for its next request.
        max_connections: the most requests served at once; one more is refused.

    Raises:
        ConfigError: when the address is no host:port, is taken, or cannot be bound.
    """

    def __init__(
        self,
        address: str,
        api: Api,
        tls: tuple[Path, Path] | None,
        socket_timeout_s: float,
        keepalive_s: float,
        max_connections: int,
    ) -> None:
        host, port = parse_address(address, SETTING)
        self.api, self.tls = api, tls
        self._socket = _bound(host, port, address)
        self.host, self.port = host, int(self._socket.getsockname()[1])
        logging.getLogger("uvicorn.error").addFilter(_Quiet())

        async def beat() -> None:
            api.health.beat("http")  # uvicorn's main loop went round

        config = uvicorn.Config(
            Application(api, socket_timeout_s, max_connections),
            log_config=None,
            access_log=False,
            lifespan="off",
            server_header=False,
            timeout_keep_alive=max(1, round(keepalive_s)),
            timeout_graceful_shutdown=int(_STOP_S / 2),
            limit_concurrency=max_connections + SPARE_CONNECTIONS,
            callback_notify=beat,
            timeout_notify=1,
            ssl_certfile=None if tls is None else str(tls[0]),
            ssl_keyfile=None if tls is None else str(tls[1]),
        )
        self._server = uvicorn.Server(config)
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{scheme}://{host}:{self.port}"

    def start(self) -> ApiServer:
        """Serves from a thread of its own, once uvicorn listens."""

        def serve() -> None:
            # Server.run, not asyncio.run(serve()): run takes the loop of the config
            # (uvloop, which [server] installs); a bare asyncio.run is asyncio's own.
            self._server.run(sockets=[self._socket])

        self._thread = threading.Thread(target=serve, name="http-serve", daemon=True)
        self._thread.start()
        deadline = time.monotonic() + _START_S
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise ConfigError(f"{SETTING}: the server did not start on {self.url}")
            time.sleep(0.01)
        self.api.health.beat("http")
        return self

    def close(self) -> None:
        """Ends the change streams, stops serving, closes the listener."""
        self.api.stopping.set()
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=_STOP_S)
        with contextlib.suppress(OSError):
            self._socket.close()


def _bound(host: str, port: int, address: str) -> socket.socket:
    """A listening socket at ``host:port``, or one line naming the setting."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    listener = socket.socket(family, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind((host, port))
        listener.listen(128)
    except OSError as exc:
        listener.close()
        why = "the address is in use" if exc.errno == errno.EADDRINUSE else exc.strerror
        raise ConfigError(f"{SETTING}={address}: cannot listen there: {why}") from None
    return listener
