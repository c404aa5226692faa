"""The Starlette routes of ``server run`` (collection_manager/http/app.py), without a socket:
they answer every path as the API's own dispatch (``Api.answer``) does, on the path as sent
(``a%2Fb`` one name, ``%ff`` no route), every method reaching the API's checks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
import redis as redis_lib

from collection_manager.config import HttpConfig
from collection_manager.http.api import Api
from collection_manager.http.app import Application
from collection_manager.http.context import Sources
from collection_manager.http.exchange import Request
from collection_manager.observability.health import Health

TOKEN = [(b"authorization", b"Bearer tok")]


def _api() -> Api:
    sources = Sources(redis_lib.Redis(), "redis://127.0.0.1:1", None, "t", "ns")  # never used
    return Api(sources, HttpConfig(http_token="tok", http_cors_origins="*"), Health())


def _asked(application: Application, method: str, raw_path: bytes, headers: Any) -> Any:
    """The status, headers and body ``application`` sends to one request."""
    scope = {"type": "http", "method": method, "path": raw_path.decode(), "headers": headers}
    scope |= {"raw_path": raw_path, "query_string": b""}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        await asyncio.sleep(30)  # the client stays until the answer is written
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    asyncio.run(application(scope, receive, send))
    start, *body = sent
    return start["status"], dict(start["headers"]), b"".join(part["body"] for part in body)


@pytest.mark.parametrize(
    ("method", "path", "headers", "status"),
    [
        ("GET", "/healthz", [], 200),
        ("DELETE", "/metrics", [], 405),  # the process' own: plain text
        ("GET", "/", [], 200),
        ("HEAD", "/console.js", [], 200),
        ("POST", "/", [], 405),  # read-only, the page too: the API's problem
        ("GET", "//console.js", [], 401),  # no file of the console: the API's, its token first
        ("GET", "/api/v1/collections", [], 401),
        ("PROPFIND", "/api/v1/collections", TOKEN, 405),  # no method Starlette knows of
        ("OPTIONS", "/api/v1/collections", [(b"origin", b"https://x")], 204),
        ("GET", "/api/v1/nothing", TOKEN, 404),
        ("GET", "/api/v1/%63ollections", TOKEN, 404),  # only a name is decoded
        ("GET", "/api/v1/collections/%ff/rows", TOKEN, 404),  # no UTF-8: no route
        ("GET", "/api/v1/collections/a%2Fb", TOKEN, 404),  # the name a/b, refused by its handler
        ("GET", "/api/v1/collections/x/rows/", TOKEN, 404),  # no slash redirected
        ("GET", "/api/v1/openapi.json", TOKEN, 200),
    ],
)
def test_the_routes_answer_as_the_api_does(
    method: str, path: str, headers: list[tuple[bytes, bytes]], status: int
) -> None:
    api = _api()
    application = Application(api, 5.0, max_connections=4)
    sent_status, sent_headers, body = _asked(application, method, path.encode(), headers)
    request = Request(method, path, "", {k.decode(): v.decode() for k, v in headers})
    answer = api.answer(request)
    assert sent_status == answer.status == status
    assert sent_headers[b"content-type"] == answer.content_type.encode()
    assert body == (b"" if method == "HEAD" else answer.body)
    for name, value in answer.headers.items():
        assert sent_headers[name.lower().encode()] == value.encode()
