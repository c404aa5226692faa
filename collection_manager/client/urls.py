"""The server's address and the URLs of the API's endpoints (pure: no I/O).

A base URL is ``http://`` or ``https://``, a host and a port (80 or 443 when left out), and
optionally a path under which a proxy serves the API (``https://ops.example.com/cm``).
A collection's name is one path segment, percent-encoded, and each ``where`` term one
``where`` query field: a term's ``&``, ``#``, ``%`` or ``+`` reaches the server as typed.
The query is never part of what an error names (:meth:`BaseUrl.shown`): a filter's values
may be what a program would not print.
"""

from __future__ import annotations

import dataclasses
import urllib.parse
from collections.abc import Iterable, Sequence

from collection_manager.client.errors import ClientError

API = "/api/v1"
_DEFAULT_PORTS = {"http": 80, "https": 443}


@dataclasses.dataclass(frozen=True)
class BaseUrl:
    """Where the server is: ``scheme`` (``http``/``https``), ``host``, ``port`` and the
    ``prefix`` path it is served under (``""`` at the root)."""

    scheme: str
    host: str
    port: int
    prefix: str = ""

    @classmethod
    def parse(cls, url: str) -> BaseUrl:
        """``url`` as a base URL.

        Raises:
            ClientError: naming what is wrong (scheme, host, port, a query or credentials).
        """
        try:
            parts = urllib.parse.urlsplit(url.strip())
            port = parts.port
        except ValueError as exc:
            raise ClientError(f"{url!r} is not a URL of the server: {exc}") from None
        scheme = parts.scheme.lower()
        if scheme not in _DEFAULT_PORTS:
            raise ClientError(
                f"{url!r} is not a URL of the server: give http://HOST:PORT or https://HOST:PORT"
            )
        if not parts.hostname:
            raise ClientError(f"{url!r} names no host")
        if parts.username is not None or parts.password is not None:
            raise ClientError(
                f"{parts.scheme}://...@{parts.hostname}: give no credentials in the URL; "
                "a token is Client(token=...)"
            )
        if parts.query or parts.fragment:
            raise ClientError(f"{url!r}: the server's URL takes no query or fragment")
        return cls(scheme, parts.hostname, port or _DEFAULT_PORTS[scheme], parts.path.rstrip("/"))

    @property
    def tls(self) -> bool:
        return self.scheme == "https"

    @property
    def origin(self) -> str:
        """``scheme://host:port``, with brackets around an IPv6 address."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{self.scheme}://{host}:{self.port}"

    def shown(self, target: str) -> str:
        """The URL of ``target`` (a path with its query) as an error names it: no query."""
        return self.origin + target.partition("?")[0]


def segment(value: str) -> str:
    """One path segment: every character but the unreserved ones percent-encoded."""
    return urllib.parse.quote(value, safe="")


def target(base: BaseUrl, path: str, query: Sequence[tuple[str, str]] = ()) -> str:
    """What a request line asks for: the prefix, ``API`` and ``path``, then the query."""
    encoded = urllib.parse.urlencode(list(query), quote_via=urllib.parse.quote)
    return f"{base.prefix}{API}{path}" + (f"?{encoded}" if encoded else "")


def collection_path(name: str, endpoint: str = "") -> str:
    """``/collections/NAME`` (and ``/rows`` or ``/changes``)."""
    if not isinstance(name, str) or not name:
        raise ClientError(f"a collection's name is a non-empty string, not {name!r}")
    return f"/collections/{segment(name)}{endpoint}"


def where_terms(where: str | Iterable[str] | None) -> list[str]:
    """``where`` as its terms: one term (``"worker_id>=2"``) or several, all of which must
    hold; None: every row."""
    if where is None:
        return []
    terms = [where] if isinstance(where, str) else list(where)
    for term in terms:
        if not isinstance(term, str):
            raise ClientError(f"a where term is a string COLUMN<op>VALUE, not {term!r}")
    return terms


def rows_query(where: str | Iterable[str] | None, limit: int | None) -> list[tuple[str, str]]:
    """The query of a rows read: a ``where`` field per term, then ``limit``."""
    query = [("where", term) for term in where_terms(where)]
    if limit is not None:
        if isinstance(limit, bool) or not isinstance(limit, int):
            raise ClientError(f"limit is an integer of 1 or more, not {limit!r}")
        query.append(("limit", str(limit)))
    return query
