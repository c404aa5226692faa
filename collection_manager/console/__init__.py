"""The web console: plain HTML, CSS and JavaScript files that ``server run`` ships at ``/``.

Nothing is built at install time: the files in ``static/`` are what the browser runs, with
no bundler, framework or CDN (the page loads nothing from outside the process that serves
it). They read the read-only API under ``/api/v1/`` like any other client: the fleet from
``replicas``, rows from a collection's ``rows``, the live change feed from its Server-Sent
Events, and the charts from ``status`` polled. docs/operations.md, "The console", says what
it shows.
"""

from __future__ import annotations

import dataclasses
from importlib import resources

INDEX = "index.html"

_TYPES = {
    ".html": "text/html; charset=utf-8",
    ".css": "text/css; charset=utf-8",
    ".js": "text/javascript; charset=utf-8",
    ".svg": "image/svg+xml",
}


@dataclasses.dataclass(frozen=True)
class Asset:
    """One file of the console, as served."""

    name: str
    body: bytes
    content_type: str


def names() -> list[str]:
    """The console's files, by name."""
    folder = resources.files(__package__).joinpath("static")
    return sorted(
        entry.name
        for entry in folder.iterdir()
        if entry.is_file() and _content_type(entry.name) is not None
    )


def asset(path: str) -> Asset | None:
    """The file served at URL path ``path`` (``/`` and ``/index.html``: the page; ``/x.js``:
    the file ``x.js``), or None for any other path: only the console's own files by their
    exact names, never a path that leads elsewhere."""
    name = path.split("?", 1)[0].lstrip("/") or INDEX
    content_type = _content_type(name)
    if content_type is None or name not in names():
        return None
    body = resources.files(__package__).joinpath("static", name).read_bytes()
    return Asset(name, body, content_type)


def _content_type(name: str) -> str | None:
    suffix = name[name.rfind(".") :] if "." in name else ""
    return _TYPES.get(suffix)
