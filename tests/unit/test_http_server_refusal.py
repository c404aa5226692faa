"""The ASGI application past its bound of requests at once: a counted 503 problem naming the
bound, with Retry-After, and nothing asked of the API."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import redis as redis_lib

from collection_manager.config import HttpConfig
from collection_manager.http import metrics
from collection_manager.http.api import Api
from collection_manager.http.context import Sources
from collection_manager.http.server import Application
from collection_manager.observability.health import Health


def test_a_request_past_the_bound_is_a_503_problem_naming_it() -> None:
    sources = Sources(redis_lib.Redis(), "redis://127.0.0.1:1", None, "t", "ns")  # never used
    application = Application(Api(sources, HttpConfig(), Health()), 5.0, max_connections=0)
    scope = {"type": "http", "method": "GET", "path": "/api/v1/collections", "headers": []}
    scope |= {"raw_path": b"/api/v1/collections", "query_string": b""}
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.disconnect"}

    async def send(message: Any) -> None:
        sent.append(message)

    before = metrics.CONNECTIONS_REFUSED._value.get()
    asyncio.run(application(scope, receive, send))
    start, body = sent
    headers = dict(start["headers"])
    assert start["status"] == 503 and headers[b"retry-after"] == b"1"
    problem = json.loads(body["body"])
    assert problem["type"].endswith(":too-many-requests") and problem["bound"] == 0
    assert metrics.CONNECTIONS_REFUSED._value.get() == before + 1
