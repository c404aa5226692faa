"""The API as a function from a request to an answer: routes, methods, the token, the bounds,
CORS, and every failure as a problem document. No socket here (``app.py`` routes requests
with Starlette to :meth:`Api.own`, :meth:`Api.page` and :meth:`Api.call`, ``server.py``
listens).

The order of the checks: the process' own paths (``/metrics``, ``/healthz``, ``/readyz``:
open, as every process serves them), the web console's files (``/``, ``collection_manager/
console``: open, its reads need the token), then for any other path: a CORS preflight, the
method (GET and HEAD only: read-only), the token, the route, a slot of the route's kind, and
the handler, within the request's deadline.

A route matches the path as it was sent, still percent-encoded, with Starlette's own
matching (``compile_path``: ``{name}`` is one segment, never empty); each argument is then
decoded on its own, strictly. So ``a%2Fb`` is the one name ``a/b`` (refused by its handler,
saying why), and a segment that is no UTF-8 is no path of the API (404).
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
import urllib.parse
from collections.abc import Callable, Mapping

from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.routing import compile_path

from collection_manager import console
from collection_manager.config import HttpConfig
from collection_manager.http import metrics
from collection_manager.http.catalog import list_collections, show_collection
from collection_manager.http.changes import follow_changes
from collection_manager.http.context import TIMEOUT_SETTING, Call, Sources
from collection_manager.http.exchange import Answer, Request, json_answer
from collection_manager.http.failures import problem_of
from collection_manager.http.fleet import list_replicas, show_status
from collection_manager.http.limits import Deadline, Slots
from collection_manager.http.openapi import API, document
from collection_manager.http.params import Query
from collection_manager.http.problems import MEDIA_TYPE, Problem
from collection_manager.http.rows import read_rows
from collection_manager.http.rows import streams as rows_stream
from collection_manager.http.security import Cors, authorize
from collection_manager.observability.health import Health

Handler = Callable[[Call, Request], Answer]

READ_METHODS = ("GET", "HEAD")
# Every process' own paths, answered before (and beside) the API's.
OWN_PATHS = ("/metrics", "/healthz", "/readyz")
_PLAIN = "text/plain; charset=utf-8"


def _openapi(call: Call, request: Request) -> Answer:
    Query(request.query)
    return json_answer(document(token=bool(call.config.http_token)))


@dataclasses.dataclass(frozen=True)
class Route:
    """A path template (``{name}``: one path segment) and its handler; a ``stream`` route
    (or one whose ``stream`` says so of a request: rows as NDJSON or Arrow) takes a
    stream's slot, not a request's."""

    template: str
    handler: Handler
    stream: bool | Callable[[Request], bool] = False

    def streams(self, request: Request) -> bool:
        return self.stream(request) if callable(self.stream) else self.stream

    @functools.cached_property
    def pattern(self) -> re.Pattern[str]:
        """The template as Starlette's router matches it (its routes are built from these)."""
        return compile_path(self.template)[0]

    def match(self, path: str) -> dict[str, str] | None:
        """The template's arguments in ``path`` as sent (each decoded), or None when it
        differs or an argument is no UTF-8."""
        found = self.pattern.match(path)
        return None if found is None else decoded(found.groupdict())


ROUTES = (
    Route(f"{API}/collections", list_collections),
    Route(f"{API}/collections/{{name}}", show_collection),
    Route(f"{API}/collections/{{name}}/rows", read_rows, stream=rows_stream),
    Route(f"{API}/collections/{{name}}/changes", follow_changes, stream=True),
    Route(f"{API}/replicas", list_replicas),
    Route(f"{API}/status", show_status),
    Route(f"{API}/openapi.json", _openapi),
)
_ENDPOINTS = ", ".join(route.template for route in ROUTES)


def decoded(arguments: Mapping[str, str]) -> dict[str, str] | None:
    """A route's arguments as matched in the path as sent, each percent-decoded on its own;
    None when one is no UTF-8."""
    try:
        return {k: urllib.parse.unquote(v, errors="strict") for k, v in arguments.items()}
    except UnicodeDecodeError:
        return None


def route_of(path: str) -> tuple[Route | None, dict[str, str]]:
    """The route of ``path`` (as sent) and its arguments; (None, {}) when none matches."""
    for route in ROUTES:
        arguments = route.match(path)
        if arguments is not None:
            return route, arguments
    return None, {}


def problem_answer(problem: Problem, instance: str) -> Answer:
    """A problem as an answer (its headers included)."""
    return Answer(problem.body(instance), MEDIA_TYPE, problem.status, dict(problem.headers))


class Api:
    """Answers requests of the API and the process' own paths.

    Args:
        sources: where answers are read from.
        config: the settings (token, bounds, CORS).
        health: what ``/healthz`` and ``/readyz`` answer.
        stopping: set when the server stops: change streams end.
    """

    def __init__(
        self,
        sources: Sources,
        config: HttpConfig,
        health: Health,
        stopping: threading.Event | None = None,
    ) -> None:
        self.sources, self.config, self.health = sources, config, health
        self.stopping = stopping or threading.Event()
        self.requests = Slots(config.http_max_requests, "too-many-requests", "CM_HTTP_MAX_REQUESTS")
        self.streams = Slots(config.http_max_streams, "too-many-streams", "CM_HTTP_MAX_STREAMS")
        self.cors = Cors.of(config.http_cors_origins)

    def answer(self, request: Request) -> Answer:
        """The answer to ``request``, routed as the server's Starlette routes route it (for a
        caller without a server); never raises (a failure is a problem answer)."""
        if request.path in OWN_PATHS:
            return self.own(request)
        if request.path in console.paths():
            return self.page(request)
        route, arguments = route_of(request.path)
        return self.call(route, dataclasses.replace(request, arguments=arguments))

    def page(self, request: Request) -> Answer:
        """A file of the web console: open, as a page needs no token (its reads do); to any
        method but a read, the API's answer."""
        page = console.asset(request.path)
        if page is None or request.method not in READ_METHODS:
            return self.call(None, request)
        headers = {"Cache-Control": "no-cache"}
        return Answer(page.body, page.content_type, headers=headers, route="console")

    def call(self, route: Route | None, request: Request) -> Answer:
        """The API's answer to ``request`` (its arguments those of ``route``, None when no
        route matched); never raises (a failure is a problem answer)."""
        label = route.template if route is not None else "other"
        try:
            answer = self._api(request, route)
        except Exception as exc:
            problem = problem_of(exc)
            metrics.ERRORS.labels(label, problem.kind).inc()
            answer = problem_answer(problem, request.path)
        answer.route = label
        allowed = self.cors.allow(request.header("Origin"))
        if allowed is not None:
            answer.headers["Access-Control-Allow-Origin"] = allowed
            answer.headers["Access-Control-Expose-Headers"] = "Retry-After, WWW-Authenticate"
            answer.headers["Vary"] = "Origin"
        return answer

    def _api(self, request: Request, route: Route | None) -> Answer:
        if request.method == "OPTIONS" and self.cors.enabled:
            return self._preflight(request)
        if request.method not in READ_METHODS:
            raise Problem(
                "method-not-allowed",
                f"{request.method[:20]} is not allowed: the API is read-only (GET and HEAD)",
                headers={"Allow": ", ".join(READ_METHODS)},
            )
        authorize(request.header("Authorization"), self.config.http_token)
        if route is None:
            raise Problem(
                "not-found",
                f"no endpoint at {request.path[:200]!r}; the endpoints: {_ENDPOINTS} "
                f"(described by {API}/openapi.json)",
            )
        ticket = (self.streams if route.streams(request) else self.requests).take()
        try:
            deadline = Deadline(self.config.http_request_timeout_s, TIMEOUT_SETTING, ticket)
            call = Call(self.sources, self.config, deadline, self.stopping)
            answer = route.handler(call, request)
        except BaseException:
            ticket.release()
            raise
        answer.finished = ticket.release
        return answer

    def _preflight(self, request: Request) -> Answer:
        """A browser asks whether a page of its origin may read: say so, or nothing."""
        answer = Answer(b"", _PLAIN, 204)
        if self.cors.allow(request.header("Origin")) is not None:
            answer.headers.update(
                {
                    "Access-Control-Allow-Methods": ", ".join(READ_METHODS),
                    "Access-Control-Allow-Headers": "Authorization, Accept, Last-Event-ID",
                    "Access-Control-Max-Age": "600",
                }
            )
        return answer

    def own(self, request: Request) -> Answer:
        """``/metrics``, ``/healthz``, ``/readyz``: as the other processes serve them."""
        if request.method not in READ_METHODS:
            return Answer(b"GET or HEAD only\n", _PLAIN, 405, {"Allow": "GET, HEAD"})
        if request.path == "/metrics":
            return Answer(generate_latest(metrics.REGISTRY), CONTENT_TYPE_LATEST, route="/metrics")
        reasons = self.health.liveness() if request.path == "/healthz" else self.health.readiness()
        text = "\n".join(reasons) if reasons else "ok"
        return Answer(f"{text}\n".encode(), _PLAIN, 503 if reasons else 200, route=request.path)
