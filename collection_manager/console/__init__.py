"""The web console: plain HTML, CSS and JavaScript files that ``server run`` ships at ``/``.

Nothing is built at install time: the files in ``static/`` are what the browser runs, with
no bundler, framework or CDN (the page loads nothing from outside the process that serves
it). They read the read-only API under ``/api/v1/`` like any other client: the fleet from
``replicas``, rows from a collection's ``rows``, the live change feed from its Server-Sent
Events, and the charts from ``status`` polled. docs/operations.md, "The console", says what
it shows.

``/api.html`` is the interactive API page: Swagger UI over ``/api/v1/openapi.json``, its two
files (``/swagger-ui/...``) served from the installed ``swagger-ui-py`` package (Swagger UI 5,
which reads OpenAPI 3.1), which the ``[server]`` extra installs; without it the page is not
there.
"""

from __future__ import annotations

import dataclasses
import importlib.util
from importlib import resources
from pathlib import Path

INDEX = "index.html"
# Swagger UI's files that the API page loads, served from swagger-ui-bundle's folder.
VENDORED = ("swagger-ui/swagger-ui.css", "swagger-ui/swagger-ui-bundle.js")

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


def paths() -> list[str]:
    """The URL paths :func:`asset` serves: ``/``, each file's, and Swagger UI's two when
    swagger-ui-py is installed."""
    vendored = VENDORED if _swagger_ui() is not None else ()
    return ["/", *(f"/{name}" for name in (*names(), *vendored))]


def asset(path: str) -> Asset | None:
    """The file served at URL path ``path`` (``/`` and ``/index.html``: the page; ``/x.js``:
    the file ``x.js``; the two of :data:`VENDORED`), or None for any other path: only the
    console's own files by their exact names, never a path that leads elsewhere."""
    name = path.split("?", 1)[0].lstrip("/") or INDEX
    content_type = _content_type(name)
    if content_type is None:
        return None
    if name in VENDORED:
        folder = _swagger_ui()
        return (
            None
            if folder is None
            else Asset(name, (folder / name.removeprefix("swagger-ui/")).read_bytes(), content_type)
        )
    if name not in names():
        return None
    body = resources.files(__package__).joinpath("static", name).read_bytes()
    return Asset(name, body, content_type)


def _swagger_ui() -> Path | None:
    """The folder of Swagger UI's files in the installed swagger-ui-py, or None when it is
    not installed. Found, not imported: its package imports jinja2 and YAML, for frameworks
    this server is not."""
    found = importlib.util.find_spec("swagger_ui")
    if found is None or not found.submodule_search_locations:
        return None
    return Path(found.submodule_search_locations[0]) / "static"


def _content_type(name: str) -> str | None:
    suffix = name[name.rfind(".") :] if "." in name else ""
    return _TYPES.get(suffix)
