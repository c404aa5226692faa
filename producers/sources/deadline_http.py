"""HTTP with one deadline for the whole exchange, for scrapes of targets that are not ours.

urllib's timeout bounds each socket operation, not their sum: a target that sends a byte
just before each timeout would hold a scrape forever. Here the connection, the status line,
the headers and every read of the body (a redirect's too) get only what is left of one
deadline. It relies on urllib's ``do_open`` and http.client's ``response_class`` hook.
"""

from __future__ import annotations

import dataclasses
import functools
import http.client
import io
import socket
import urllib.request
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer


@dataclasses.dataclass(frozen=True)
class Deadline:
    """The end of a scrape: ``at`` on the ``monotonic`` clock."""

    at: float
    monotonic: Callable[[], float]

    def remaining(self) -> float:
        """Seconds left; raises TimeoutError (as a socket would) when none are."""
        left = self.at - self.monotonic()
        if left <= 0:
            raise TimeoutError("the scrape's deadline has passed")
        return left


class DeadlineReader(io.RawIOBase):
    """A socket's byte stream in which every read waits only until the deadline.

    A socket timeout alone bounds each read, not their sum: a target that sends a byte
    just before each timeout would hold the scrape forever.
    """

    def __init__(self, sock: socket.socket, deadline: Deadline) -> None:
        super().__init__()
        self._sock = sock
        self._stream = sock.makefile("rb", buffering=0)
        self._deadline = deadline

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: WriteableBuffer) -> int | None:
        self._sock.settimeout(self._deadline.remaining())
        return self._stream.readinto(buffer)

    def close(self) -> None:
        self._stream.close()
        super().close()


class DeadlineResponse(http.client.HTTPResponse):
    """An HTTP response whose status line, headers and body are all read by deadline."""

    def __init__(self, sock: socket.socket, *args: Any, deadline: Deadline, **kwargs: Any) -> None:
        super().__init__(sock, *args, **kwargs)
        self.fp.close()  # the plain stream the base class opened; nothing was read from it
        self.fp = io.BufferedReader(DeadlineReader(sock, deadline))


class DeadlineHandler(urllib.request.AbstractHTTPHandler):
    """urllib's HTTP and HTTPS handlers, with connections that keep the deadline."""

    def __init__(self, deadline: Deadline) -> None:
        super().__init__()
        self._deadline = deadline

    def http_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(self._connect, http.client.HTTPConnection), req)

    def https_open(self, req: urllib.request.Request) -> http.client.HTTPResponse:
        return self.do_open(functools.partial(self._connect, http.client.HTTPSConnection), req)

    http_request = urllib.request.AbstractHTTPHandler.do_request_
    https_request = urllib.request.AbstractHTTPHandler.do_request_

    def _connect(
        self, kind: type[http.client.HTTPConnection], host: str, **kwargs: Any
    ) -> http.client.HTTPConnection:
        # A redirect's connection, too, has only what is left of the scrape's time.
        kwargs["timeout"] = self._deadline.remaining()
        connection = kind(host, **kwargs)
        # http.client builds its response as response_class(sock, method=...): a partial
        # with the deadline bound does the same.
        response = functools.partial(DeadlineResponse, deadline=self._deadline)
        connection.response_class = cast(type[http.client.HTTPResponse], response)
        return connection


def opener(deadline: Deadline) -> urllib.request.OpenerDirector:
    """An opener whose every connection and read keeps ``deadline``."""
    # Built by hand rather than by build_opener: only http(s) (a redirect to ftp:// or a
    # file:// URL fails), and no proxy from the environment: a scrape goes straight to the
    # target, as Prometheus' does.
    opener = urllib.request.OpenerDirector()
    for handler in (
        DeadlineHandler(deadline),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPRedirectHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),
    ):
        opener.add_handler(handler)
    return opener
