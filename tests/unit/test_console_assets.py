"""The console's files as ``serve`` ships them: found by their exact names, typed, and
nothing else (no path leads outside them); the page loads only its own files."""

from __future__ import annotations

import re

import pytest
import redis as redis_lib

from collection_manager import console
from collection_manager.config import HttpConfig
from collection_manager.http.api import Api
from collection_manager.http.context import Sources
from collection_manager.http.exchange import Request
from collection_manager.observability.health import Health


def test_the_page_and_its_files_are_served_with_their_types() -> None:
    assert console.names() == ["api.html", "api.js", "console.css", "console.js", "index.html"]
    for path in ("/", "/index.html", "/?collection=x"):
        page = console.asset(path)
        assert page is not None and page.name == "index.html"
        assert page.content_type == "text/html; charset=utf-8"
    script = console.asset("/console.js")
    assert script is not None and script.content_type.startswith("text/javascript")
    style = console.asset("/console.css")
    assert style is not None and style.content_type.startswith("text/css")


@pytest.mark.parametrize(
    "path",
    [
        "/../__init__.py",
        "/static/index.html",
        "/__init__.py",
        "/x.js",
        "/%2e%2e/console.js",
        "//etc/passwd",
        "/swagger-ui/index.html",
        "/swagger-ui/../swagger-ui/swagger-ui.css",
        "/swagger-ui/swagger-ui.js",
    ],
)
def test_no_other_path_is_served(path: str) -> None:
    assert console.asset(path) is None


def test_the_page_loads_nothing_from_outside() -> None:
    page = console.asset("/")
    assert page is not None
    html = page.body.decode()
    linked = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert sorted(linked) == ["console.css", "console.js", "data:,"]
    for name in console.names():
        asset = console.asset("/" + name)
        assert asset is not None
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", asset.body.decode()), name


def test_the_api_page_loads_swagger_ui_from_the_package_and_nothing_from_outside() -> None:
    page = console.asset("/api.html")
    assert page is not None
    linked = re.findall(r'(?:src|href)="([^"]*)"', page.body.decode())
    assert sorted(linked) == [
        "/",
        "/api/v1/openapi.json",
        "api.js",
        "data:,",
        "swagger-ui/swagger-ui-bundle.js",
        "swagger-ui/swagger-ui.css",
    ]
    for name in console.VENDORED:
        vendored = console.asset("/" + name)
        assert vendored is not None and len(vendored.body) > 100_000, name
    script = console.asset("/api.js")
    assert script is not None and "/api/v1/openapi.json" in script.body.decode()


def _api(token: str | None = None) -> Api:
    sources = Sources(redis_lib.Redis(), "redis://127.0.0.1:1", None, "t", "ns")  # never used
    return Api(sources, HttpConfig(http_token=token), Health())


def test_serve_answers_the_console_without_a_token_and_its_reads_with_one() -> None:
    api = _api(token="s3cret")

    page = api.answer(Request("GET", "/"))
    script = api.answer(Request("HEAD", "/console.js"))
    other = api.answer(Request("GET", "/secrets.txt"))
    read = api.answer(Request("GET", "/api/v1/replicas"))

    assert (page.status, page.content_type, page.route) == (
        200,
        "text/html; charset=utf-8",
        "console",
    )
    index = console.asset("/")
    assert index is not None and page.body == index.body
    assert page.headers["Cache-Control"] == "no-cache"
    assert (script.status, script.content_type) == (200, "text/javascript; charset=utf-8")
    assert other.status == 401  # not the console's: the API's rules, the token first
    assert read.status == 401
    assert api.answer(Request("POST", "/")).status == 405  # read-only, the page too
