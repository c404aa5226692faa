"""HTTP/1.1 to the server with the standard library alone: ``http.client`` and ``ssl``.

The client is in the core install that every replica agent carries, so it adds no
dependency (no requests, no httpx). What this module owns:

- one connection per answer being read, so a streamed answer (rows, a change feed) never
  blocks another request; the connection of a JSON answer read whole is kept for the next
  one, and a kept connection the server closed meanwhile is replaced once, silently (every
  request is a GET: sending it again is safe);
- the headers every request carries: ``Accept``, ``User-Agent``, ``Authorization: Bearer``
  when a token is given (never shown in an error, a log line or a ``repr``);
- turning failures into the client's exceptions: an error answer into its problem
  (``problems.py``), a socket, DNS or TLS failure into :class:`ConnectionFailed` naming the
  URL and why, an answer cut short into :class:`BrokenAnswer`; no traceback of
  ``http.client`` or ``ssl`` reaches the caller (each is chained as ``__cause__``).
"""

from __future__ import annotations

import http.client
import json
import socket
import ssl
import threading
from collections.abc import Mapping
from typing import Any

from collection_manager import release
from collection_manager.client import problems
from collection_manager.client.errors import BrokenAnswer, ConnectionFailed
from collection_manager.client.urls import BaseUrl

JSON = "application/json"
USER_AGENT = f"collection-manager-client/{release.version()}"
# What a reused connection the server closed while it was idle looks like.
_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)
# The most an error answer's body is read: its detail needs no more.
_ERROR_BODY = 64 * 1024


def reason_of(exc: BaseException, timeout: float | None = None) -> str:
    """A failure of a connection, in a few words a person can act on."""
    if isinstance(exc, ssl.SSLCertVerificationError):
        message = getattr(exc, "verify_message", None)  # set by a real handshake only
        why = f": {message}" if message else ""
        return f"TLS: certificate verify failed{why} (trust its CA: tls=CA_FILE)"
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {getattr(exc, 'reason', None) or exc}"
    if isinstance(exc, TimeoutError | socket.timeout):
        return "no answer" + (f" within {timeout:g} s" if timeout is not None else "")
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host: {exc.strerror or exc}"
    if isinstance(exc, http.client.RemoteDisconnected):
        return "the server closed the connection without an answer"
    if isinstance(exc, http.client.IncompleteRead):
        return "the answer was cut short"
    if isinstance(exc, http.client.HTTPException):
        return f"not an HTTP answer ({type(exc).__name__})"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


class Answer:
    """An answer of status 2xx whose body is still to be read, from its own connection.

    Reads raise :class:`BrokenAnswer` when the body breaks off, :class:`ConnectionFailed`
    when the socket fails or stays silent past the timeout.
    """

    def __init__(
        self,
        response: http.client.HTTPResponse,
        connection: http.client.HTTPConnection,
        url: str,
        timeout: float,
        collection: str | None,
    ) -> None:
        self._response, self._connection = response, connection
        self.url, self.timeout, self.collection = url, timeout, collection
        self.headers = dict(response.getheaders())

    @property
    def content_type(self) -> str:
        return self._response.getheader("Content-Type", "").split(";", 1)[0].strip().lower()

    def _failed(self, exc: BaseException) -> Exception:
        self.close()
        if isinstance(exc, http.client.IncompleteRead | http.client.HTTPException):
            return BrokenAnswer(self.url, reason_of(exc), collection=self.collection)
        return ConnectionFailed(self.url, reason_of(exc, self.timeout), collection=self.collection)

    def read(self, size: int = -1) -> bytes:
        """Up to ``size`` bytes of the body (all of it: -1); ``b""`` at its end."""
        try:
            return self._response.read(None if size < 0 else size)
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(exc) from exc

    def read1(self, size: int) -> bytes:
        """What has come of the body, at most ``size`` bytes, waiting only when nothing has:
        what a stream reads, so that an event is handed on as soon as it is whole."""
        try:
            return self._response.read1(size)
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(exc) from exc

    def readline(self, limit: int) -> bytes:
        """One line of the body with its newline (``b""`` at the end), at most ``limit``."""
        try:
            return self._response.readline(limit)
        except (OSError, http.client.HTTPException) as exc:
            raise self._failed(exc) from exc

    @property
    def reusable(self) -> bool:
        """Whether the body was read to its end and the server keeps the connection."""
        return self._response.isclosed() and not self._response.will_close

    def detach(self) -> http.client.HTTPConnection:
        """The connection, for the next request (after a body read whole)."""
        return self._connection

    def close(self) -> None:
        """Ends the answer: its connection is closed (a stream's read ends on the server)."""
        self._response.close()
        self._connection.close()


class Transport:
    """GET requests to one server.

    Args:
        base: the server's URL.
        token: the bearer token, or None.
        tls: the TLS context of an ``https`` URL (None for ``http``).
        timeout: seconds a connection, and each read of an answer, may take.
    """

    def __init__(
        self, base: BaseUrl, token: str | None, tls: ssl.SSLContext | None, timeout: float
    ) -> None:
        self.base, self.timeout = base, timeout
        self._tls = tls
        self._headers = {"User-Agent": USER_AGENT}
        if token:
            self._headers["Authorization"] = f"Bearer {token}"
        self._idle: http.client.HTTPConnection | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:  # never the token
        return f"Transport({self.base.origin + self.base.prefix!r})"

    def _connection(self, timeout: float) -> http.client.HTTPConnection:
        if self._tls is not None:
            return http.client.HTTPSConnection(
                self.base.host, self.base.port, timeout=timeout, context=self._tls
            )
        return http.client.HTTPConnection(self.base.host, self.base.port, timeout=timeout)

    def _take_idle(self) -> http.client.HTTPConnection | None:
        with self._lock:
            connection, self._idle = self._idle, None
        return connection

    def keep(self, answer: Answer) -> None:
        """Keeps the connection of an answer read whole for the next request."""
        if not answer.reusable:
            answer.close()
            return
        with self._lock:
            previous, self._idle = self._idle, answer.detach()
        if previous is not None:
            previous.close()

    def get(
        self,
        target: str,
        accept: str,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = None,
        collection: str | None = None,
    ) -> Answer:
        """Asks for ``target``; the answer when it is 2xx, its body not read yet.

        A streamed answer (``timeout`` given: a stream's own) takes a new connection.

        Raises:
            ProblemError: the server refused (its problem document as attributes).
            ConnectionFailed: no answer, naming the URL and why.
            BrokenAnswer: an answer of another media type than ``accept``.
        """
        url = self.base.shown(target)
        sent = {**self._headers, "Accept": accept, **(headers or {})}
        seconds = self.timeout if timeout is None else timeout
        idle = self._take_idle() if timeout is None else None
        try:
            response, connection = self._send(idle, target, sent, seconds)
        except (OSError, http.client.HTTPException) as exc:
            raise ConnectionFailed(url, reason_of(exc, seconds), collection=collection) from exc
        answer = Answer(response, connection, url, seconds, collection)
        if not 200 <= response.status < 300:
            raise self._refusal(answer, response, collection)
        if answer.content_type != accept:  # a proxy's page, or a server that ignored Accept
            answer.close()
            found = answer.content_type or "no media type"
            raise BrokenAnswer(url, f"{found}, not {accept}", collection=collection)
        return answer

    def _send(
        self,
        idle: http.client.HTTPConnection | None,
        target: str,
        headers: dict[str, str],
        timeout: float,
    ) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection]:
        if idle is not None:
            try:
                idle.request("GET", target, headers=headers)
                return idle.getresponse(), idle
            except _STALE:
                idle.close()  # closed by the server while it was kept: a new one, once
        connection = self._connection(timeout)
        try:
            connection.request("GET", target, headers=headers)
            return connection.getresponse(), connection
        except BaseException:
            connection.close()
            raise

    def _refusal(
        self, answer: Answer, response: http.client.HTTPResponse, collection: str | None
    ) -> Exception:
        try:
            body = answer.read(_ERROR_BODY)
        except (BrokenAnswer, ConnectionFailed):
            body = b""
        finally:
            answer.close()
        return problems.from_answer(
            response.status,
            response.reason,
            answer.content_type,
            body,
            answer.url,
            answer.headers,
            collection,
        )

    def get_json(self, target: str, collection: str | None = None) -> Any:
        """The JSON document at ``target``.

        Raises:
            BrokenAnswer: when the answer is not JSON.
            ProblemError, ConnectionFailed: as :meth:`get`.
        """
        answer = self.get(target, JSON, collection=collection)
        body = answer.read()
        self.keep(answer)
        try:
            return json.loads(body)
        except ValueError as exc:
            raise BrokenAnswer(answer.url, f"not JSON ({exc})", collection=collection) from None

    def close(self) -> None:
        """Closes the kept connection (answers still being read keep their own)."""
        idle = self._take_idle()
        if idle is not None:
            idle.close()
