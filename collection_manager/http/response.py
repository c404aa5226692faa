"""An answer of the API (``exchange.Answer``) as a Starlette response, written as ``server run``
must write it.

Starlette's own ``StreamingResponse`` does not do for a read of Redis: it makes each part in
Starlette's default thread pool, and on uvicorn (ASGI 2.4) stops listening for the client
going away. Here each part is made in a thread of the server's bounded pool and asked for
only once the last was sent; uvicorn's send waits while the client reads nothing, and that is
a stream's back-pressure. A client that takes nothing for ``CM_HTTP_REQUEST_TIMEOUT_S`` is
dropped; one that goes away ends the answer at once, and its generator is closed (its read
ends, its slot is given back). A part that cannot be made (the read failed after its first
step) cuts the answer short without its last chunk, so that the client cannot take it for
the whole: one warning line, never a traceback.

Each request is one line of the log at INFO (``-v``): method, path without its query,
status, time.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from collection_manager.core.errors import CollectionManagerError
from collection_manager.http import metrics
from collection_manager.http.exchange import Answer

logger = logging.getLogger(__name__)

T = TypeVar("T")

# The methods metrics and logs name; any other is "other" (a label a client cannot grow).
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


class Bounds:
    """What every answer is made and written within.

    Args:
        threads: the most blocking calls at once (the answers, their parts, their clean-up):
            as many as requests may be served at once.
        write_timeout_s: how long a client may take nothing before it is dropped.
    """

    def __init__(self, threads: int, write_timeout_s: float) -> None:
        self.threads = anyio.CapacityLimiter(threads)
        self.write_timeout_s = write_timeout_s

    async def run(self, function: Callable[..., T], *args: Any) -> T:
        """``function(*args)`` in a thread of the pool, not of Starlette's default one."""
        return await anyio.to_thread.run_sync(function, *args, limiter=self.threads)


class AnswerResponse(Response):
    """``answer`` written to the client, whole or part by part.

    Args:
        answer: what to write.
        path: the path asked for (as sent), for the log.
        arrived: when the request arrived (``time.monotonic``), for the metrics and the log.
        bounds: the pool and the send's timeout.
    """

    def __init__(self, answer: Answer, path: str, arrived: float, bounds: Bounds) -> None:
        # Not Response.__init__: a stream has no body to count, and the media type goes as
        # the API gave it (Starlette would add a charset to text/event-stream).
        self.answer, self.path, self.arrived, self.bounds = answer, path, arrived, bounds
        self.status_code = answer.status
        if isinstance(answer.body, bytes):
            self.body = answer.body
        self.init_headers({"Content-Type": answer.content_type, **answer.headers})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        try:
            async with anyio.create_task_group() as tasks:
                # A client that goes away ends the answer (and so the read) at once.
                tasks.start_soon(_cancel_on_disconnect, receive, tasks.cancel_scope)
                await self._write(scope["method"] == "HEAD", send)
                tasks.cancel_scope.cancel()
        finally:
            await self._finish(scope["method"])

    async def _write(self, head_only: bool, send: Send) -> None:
        start = {"type": "http.response.start", "status": self.status_code}
        await self._send(send, start | {"headers": self.raw_headers})
        body = self.answer.body
        if isinstance(body, bytes):
            whole = {"type": "http.response.body", "body": b"" if head_only else body}
            await self._send(send, whole)
            self._took()
            return
        changes = self.answer.route.endswith("/changes")
        if changes:  # a change stream's time is until its head, not its whole life
            self._took()
        if not head_only and not await self._write_parts(iter(body), send):
            return  # cut short: no last chunk, so the client cannot take it for the whole
        await self._send(send, {"type": "http.response.body", "body": b""})
        if not changes:
            self._took()

    async def _write_parts(self, parts: Iterator[bytes], send: Send) -> bool:
        """Each part as it is made, made only once the last went out; False when a part
        could not be made, said in one line."""
        while True:
            try:
                part = await self.bounds.run(next, parts, None)
            except Exception as exc:
                why = _reason(exc)
                logger.warning("GET %s: the answer was cut short: %s", self.path[:200], why)
                return False
            if part is None:
                return True
            if part:
                message = {"type": "http.response.body", "body": part, "more_body": True}
                await self._send(send, message)

    async def _send(self, send: Send, message: Message) -> None:
        """``send``, or the connection dropped when the client took nothing for the bound."""
        with anyio.fail_after(self.bounds.write_timeout_s):
            await send(message)

    def _took(self) -> None:
        metrics.DURATION.labels(self.answer.route).observe(time.monotonic() - self.arrived)

    async def _finish(self, method: str) -> None:
        """What the answer held given back (a stream's generator closed: its own clean-up
        runs now), the request counted and logged."""
        close = getattr(self.answer.body, "close", None)
        if close is not None:
            await self.bounds.run(close)
        if self.answer.finished is not None:
            self.answer.finished()
        label = method if method in _METHODS else "other"
        metrics.REQUESTS.labels(self.answer.route, label, str(self.status_code)).inc()
        took_ms = (time.monotonic() - self.arrived) * 1000
        logger.info("%s %s %d %.0f ms", label, self.path[:200], self.status_code, took_ms)


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def _reason(exc: Exception) -> str:
    # Our errors say what went wrong and hold no secret; another's type is enough.
    if isinstance(exc, CollectionManagerError):
        return f"{type(exc).__name__}: {exc}"
    return type(exc).__name__
