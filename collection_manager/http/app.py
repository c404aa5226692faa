"""The ASGI application of ``server run``: Starlette routes each request to the API (``api.py``)
and writes its answer back (``response.py``).

The routes are Starlette's, built from the API's own table (``api.ROUTES``), the process'
own paths (``/metrics``, ``/healthz``, ``/readyz``) and the console's files. Any other path
is the API's too (the router's default), so that it is answered after the API's own checks:
``POST /nothing`` is 405 and ``GET /nothing`` without the token 401, as problem documents,
not a bare 404. For the same reason each endpoint is an ASGI app, which Starlette lets every
method reach: the API refuses what it does not serve itself, not with Starlette's plain 405.
Trailing slashes are not redirected: ``/rows/`` is no path of the API.

The router sees the path as it was sent (``raw_path``), still percent-encoded: uvicorn's
``path`` is decoded whole, in which ``a%2Fb`` would be two segments and ``%ff`` a replacement
character. Each argument is then decoded on its own, strictly (``api.decoded``): ``a%2Fb`` is
the name ``a/b``, which its handler refuses saying why, and a segment that is no UTF-8 finds
no route (404).

Every read is a blocking redis-py loop of bounded steps, so each answer is made in a thread
of one bounded pool (``response.Bounds``), as many threads as requests are served at once;
the event loop only moves bytes. One request more is refused at once with the API's
too-many-requests problem, naming the bound.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable

from starlette.middleware import Middleware
from starlette.requests import Request as StarletteRequest
from starlette.routing import BaseRoute, Route, Router
from starlette.types import ASGIApp, Receive, Scope, Send

from collection_manager import console
from collection_manager.http import metrics
from collection_manager.http.api import OWN_PATHS, ROUTES, Api, decoded, problem_answer
from collection_manager.http.api import Route as ApiRoute
from collection_manager.http.exchange import Answer, Request
from collection_manager.http.problems import Problem
from collection_manager.http.response import AnswerResponse, Bounds

# Idle keep-alive connections beyond the answers running: uvicorn holds them cheaply, but a
# bound stays a bound.
SPARE_CONNECTIONS = 64


class Application(Router):
    """The routes of the API, the process' own paths and the console.

    Args:
        api: what answers.
        write_timeout_s: how long a client may take nothing before it is dropped.
        max_connections: the most requests served at once (the pool's threads); one more
            is refused (503) and counted.
    """

    def __init__(self, api: Api, write_timeout_s: float, max_connections: int) -> None:
        bounds = Bounds(max_connections, write_timeout_s)
        super().__init__(
            _routes(api, bounds),
            redirect_slashes=False,
            default=_Endpoint(functools.partial(api.call, None), bounds),
            middleware=[
                Middleware(_AsSent),
                Middleware(_AtMost, bound=max_connections, bounds=bounds),
            ],
        )


def _routes(api: Api, bounds: Bounds) -> list[BaseRoute]:
    own = [Route(path, _Endpoint(api.own, bounds)) for path in OWN_PATHS]
    pages = [Route(path, _Endpoint(api.page, bounds)) for path in console.paths()]
    calls = [
        Route(route.template, _Endpoint(functools.partial(_call, api, route), bounds))
        for route in ROUTES
    ]
    return [*own, *pages, *calls]


def _call(api: Api, route: ApiRoute, request: Request) -> Answer:
    """The API's answer on ``route``, its arguments decoded; when one is no UTF-8, the
    API's answer to a path that is none of its routes."""
    arguments = decoded(request.arguments)
    found = None if arguments is None else route
    return api.call(found, dataclasses.replace(request, arguments=arguments or {}))


class _Endpoint:
    """A route's endpoint: the request as the API's, answered in a thread of the pool,
    the answer written back."""

    def __init__(self, answer: Callable[[Request], Answer], bounds: Bounds) -> None:
        self.answer, self.bounds = answer, bounds

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        arrived = time.monotonic()
        request = _request(StarletteRequest(scope))
        answer = await self.bounds.run(self.answer, request)
        await AnswerResponse(answer, request.path, arrived, self.bounds)(scope, receive, send)


def _request(request: StarletteRequest) -> Request:
    """Starlette's request as the API's: the path as sent, the query still percent-encoded,
    a repeated header its last value, the route's arguments as matched."""
    headers = dict(request.headers.items())
    query = request.scope["query_string"].decode("latin-1")
    return Request(request.method, request.scope["path"], query, headers, request.path_params)


class _AsSent:
    """The router given the path as it was sent (see the module's docstring)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # no lifespan, no websockets
            return
        raw = scope.get("raw_path") or scope["path"].encode()
        await self.app({**scope, "path": raw.decode("latin-1")}, receive, send)


class _AtMost:
    """At most ``bound`` requests served at once; one more is refused at once (a queue would
    only make every client late), counted, with the API's too-many-requests problem."""

    def __init__(self, app: ASGIApp, bound: int, bounds: Bounds) -> None:
        self.app, self.bound, self.bounds = app, bound, bounds
        self._serving = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self._serving >= self.bound:
            await self._refuse(scope, receive, send)
            return
        self._serving += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self._serving -= 1

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        arrived = time.monotonic()
        metrics.CONNECTIONS_REFUSED.inc()
        refused = Problem(
            "too-many-requests",
            f"the server serves {self.bound} requests at once, its most (CM_HTTP_MAX_REQUESTS "
            f"+ CM_HTTP_MAX_STREAMS + {SPARE_CONNECTIONS}); try again shortly",
            bound=self.bound,
            headers={"Retry-After": "1", "Connection": "close"},
        )
        answer = problem_answer(refused, scope["path"])
        await AnswerResponse(answer, scope["path"], arrived, self.bounds)(scope, receive, send)
