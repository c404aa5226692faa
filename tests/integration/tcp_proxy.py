"""A loopback TCP proxy that a test cuts at will: every connection it accepts is forwarded
to one target, until the test drops them all, or lets only a few more bytes through toward
the client (so that an answer breaks off mid-event) and then drops them.

Bytes are forwarded as they come, by two threads per connection; nothing is buffered or
parsed, so a client behind it sees exactly what a network that fails would show it.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from types import TracebackType

_CHUNK = 65536


class TcpProxy:
    """Listens on 127.0.0.1 (a free port) and forwards to ``host``:``port``.

    Attributes:
        connections: how many connections it accepted so far.
    """

    def __init__(self, host: str, port: int) -> None:
        self._target = (host, port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self._lock = threading.Lock()
        self._open: list[socket.socket] = []
        self._allowance: int | None = None  # bytes still let through to clients, then cut
        self.connections = 0
        threading.Thread(target=self._accept, name="proxy-accept", daemon=True).start()

    @property
    def port(self) -> int:
        return int(self._listener.getsockname()[1])

    def _accept(self) -> None:
        while True:
            try:
                downstream, _ = self._listener.accept()
            except OSError:
                return  # closed
            upstream = socket.create_connection(self._target, timeout=10)
            upstream.settimeout(None)
            with self._lock:
                self._open += [downstream, upstream]
                self.connections += 1
            threading.Thread(
                target=self._pump, args=(downstream, upstream, False), daemon=True
            ).start()
            threading.Thread(
                target=self._pump, args=(upstream, downstream, True), daemon=True
            ).start()

    def _pump(self, source: socket.socket, sink: socket.socket, to_client: bool) -> None:
        try:
            while data := source.recv(_CHUNK):
                cut = False
                if to_client:
                    with self._lock:
                        if self._allowance is not None:
                            data, cut = data[: self._allowance], len(data) >= self._allowance
                            self._allowance -= len(data)
                sink.sendall(data)
                if cut:
                    self.drop_all()
                    return
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                _shut(sock)

    def cut_after(self, allowance: int) -> None:
        """Lets ``allowance`` more bytes through toward the clients, then drops every
        connection (and lets everything through again)."""
        with self._lock:
            self._allowance = allowance

    def drop_all(self) -> None:
        """Closes every connection open now, both ways; new ones are accepted as before."""
        with self._lock:
            dropped, self._open = self._open, []
            self._allowance = None
        for sock in dropped:
            _shut(sock)

    def close(self) -> None:
        self._listener.close()
        self.drop_all()

    def __enter__(self) -> TcpProxy:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)  # wakes the other pump's recv
    sock.close()
