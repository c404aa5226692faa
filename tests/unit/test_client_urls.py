"""The client's URLs (collection_manager/client/urls.py), without services: base URLs
parsed and refused, names and where terms reaching the server as typed, and errors that
never name a query."""

from __future__ import annotations

import urllib.parse

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.client.errors import ClientError
from collection_manager.client.urls import BaseUrl, collection_path, rows_query, target
from collection_manager.http.api import route_of
from collection_manager.http.params import Query


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("http://127.0.0.1:8080", BaseUrl("http", "127.0.0.1", 8080)),
        ("https://ops.example.com", BaseUrl("https", "ops.example.com", 443)),
        ("HTTP://localhost/", BaseUrl("http", "localhost", 80)),
        ("https://ops.example.com:8443/cm/", BaseUrl("https", "ops.example.com", 8443, "/cm")),
        ("http://[::1]:9000", BaseUrl("http", "::1", 9000)),
    ],
)
def test_base_urls(url: str, parsed: BaseUrl) -> None:
    assert BaseUrl.parse(url) == parsed
    assert BaseUrl.parse("http://[::1]:9000").origin == "http://[::1]:9000"


@pytest.mark.parametrize(
    ("url", "says"),
    [
        ("127.0.0.1:8080", "give http://HOST:PORT"),
        ("ftp://host", "give http://HOST:PORT"),
        ("http://", "names no host"),
        ("http://host:99999", "not a URL"),
        ("http://user:secret@host", "give no credentials"),
        ("http://host/?limit=1", "takes no query"),
    ],
)
def test_what_is_no_servers_url_is_refused_naming_why(url: str, says: str) -> None:
    with pytest.raises(ClientError, match=says) as refused:
        BaseUrl.parse(url)
    assert "secret" not in str(refused.value)


def test_a_target_is_the_prefix_the_api_and_the_path() -> None:
    base = BaseUrl.parse("https://ops.example.com/cm")
    assert target(base, "/status") == "/cm/api/v1/status"
    assert (
        target(base, "/status", [("topic", "cm.requests")]) == "/cm/api/v1/status?topic=cm.requests"
    )
    # What an error names: no query (a filter's values stay out of messages and logs).
    shown = base.shown(target(base, "/collections/c/rows", [("where", "secret=1")]))
    assert shown == "https://ops.example.com:443/cm/api/v1/collections/c/rows"


NAMES = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1)
TERMS = st.lists(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",))), max_size=5)


@given(NAMES, TERMS, st.one_of(st.none(), st.integers(min_value=1)))
def test_names_and_terms_reach_the_server_as_typed(
    name: str, terms: list[str], limit: int | None
) -> None:
    """The server's own route matching and query parsing give back what the client sent."""
    path, _, query = target(
        BaseUrl.parse("http://h"), collection_path(name, "/rows"), rows_query(terms, limit)
    ).partition("?")
    route, arguments = route_of(path)
    assert route is not None and route.template.endswith("/rows")
    assert arguments == {"name": name}
    parsed = Query(query, single=("limit",), repeated=("where",))
    assert parsed.all("where") == terms
    assert parsed.one("limit") == (None if limit is None else str(limit))
    assert urllib.parse.unquote(path) == f"/api/v1/collections/{name}/rows"


def test_where_is_one_term_or_several_and_limit_an_integer() -> None:
    assert rows_query("worker_id>=2", None) == [("where", "worker_id>=2")]
    assert rows_query(("a=1", "b^=x"), 5) == [("where", "a=1"), ("where", "b^=x"), ("limit", "5")]
    assert rows_query(None, None) == []
    for limit in (True, 1.5, "5"):
        with pytest.raises(ClientError, match="limit is an integer"):
            rows_query(None, limit)  # type: ignore[arg-type]
    with pytest.raises(ClientError, match="a where term is a string"):
        rows_query([("a", "=", 1)], None)  # type: ignore[list-item]
    with pytest.raises(ClientError, match="non-empty string"):
        collection_path("")
