"""The server runs on the event loop ``[server]`` installs for it: uvloop, uvicorn's own choice
(``asyncio.run`` of uvicorn's ``serve`` ran asyncio's loop instead, unseen, from the move to
uvicorn to 2026-12-02: bench/notes.md)."""

from __future__ import annotations

import redis as redis_lib
import requests
import uvloop

from collection_manager.config import HttpConfig
from collection_manager.http.api import Api
from collection_manager.http.context import Sources
from collection_manager.http.server import ApiServer
from collection_manager.observability.health import Health


def test_the_server_runs_on_uvloop() -> None:
    sources = Sources(redis_lib.Redis(), "redis://127.0.0.1:1", None, "t", "ns")  # never read
    api = Api(sources, HttpConfig(), Health())
    server = ApiServer("127.0.0.1:0", api, None, 5.0, 5.0, max_connections=4).start()
    try:
        loops = {listener.get_loop() for listener in server._server.servers}
        assert loops and all(isinstance(loop, uvloop.Loop) for loop in loops)
        assert requests.get(f"{server.url}/healthz", timeout=10).status_code == 200
    finally:
        server.close()
