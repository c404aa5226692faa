"""Errors as ``application/problem+json`` (RFC 9457): what went wrong, for whom to fix it.

Every refusal of the API is a :class:`Problem`: a status code, a ``type`` URI that names
the kind (stable: clients may switch on it), a ``title`` per kind, a ``detail`` that says
what was wrong in this request and what would be valid, and where they apply the
``parameter`` at fault and the ``bound`` it broke. No detail holds a traceback, a token or
a password (URLs are redacted where the error names one).
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

MEDIA_TYPE = "application/problem+json"
# A URN per kind: stable names, not addresses (the kinds are documented in
# docs/operations.md, "Reading over HTTP", and in the OpenAPI document).
TYPE_PREFIX = "urn:collection-manager:problem:"

# kind -> (status, title). The title is the same for every problem of a kind.
KINDS: dict[str, tuple[int, str]] = {
    "bad-parameter": (400, "A parameter is not valid"),
    "unauthorized": (401, "A bearer token is needed"),
    "not-found": (404, "No such resource"),
    "unknown-collection": (404, "No such collection"),
    "method-not-allowed": (405, "The API is read-only"),
    "not-acceptable": (406, "No acceptable representation"),
    "log-trimmed": (410, "The change log no longer holds those changes"),
    "too-many-rows": (422, "Too many rows for this answer"),
    "too-many-requests": (503, "Too many requests at once"),
    "too-many-streams": (503, "Too many change streams at once"),
    "unavailable": (503, "The store cannot answer now"),
    "timeout": (504, "The answer took too long"),
    "internal": (500, "The server failed"),
}


@dataclasses.dataclass
class Problem(Exception):
    """A refusal: ``kind`` is a key of :data:`KINDS`.

    Attributes:
        detail: one sentence or two: what was wrong, and what would be valid.
        parameter: the parameter at fault (a query parameter, a path part, a header).
        bound: the limit that was broken, when one was.
        headers: more headers of the answer (``Retry-After``, ``Allow``, ...).
    """

    kind: str
    detail: str
    parameter: str | None = None
    bound: int | float | None = None
    headers: dict[str, str] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"no problem kind {self.kind!r}")
        super().__init__(self.detail)

    @property
    def status(self) -> int:
        return KINDS[self.kind][0]

    @property
    def type(self) -> str:
        return TYPE_PREFIX + self.kind

    def document(self, instance: str | None = None) -> dict[str, Any]:
        """The problem document; ``instance`` is the path that was asked for."""
        document: dict[str, Any] = {
            "type": self.type,
            "title": KINDS[self.kind][1],
            "status": self.status,
            "detail": self.detail,
        }
        if instance is not None:
            document["instance"] = instance
        if self.parameter is not None:
            document["parameter"] = self.parameter
        if self.bound is not None:
            document["bound"] = self.bound
        return document

    def body(self, instance: str | None = None) -> bytes:
        """The document as the bytes of an answer."""
        return json.dumps(self.document(instance), separators=(",", ":")).encode() + b"\n"


def bad_parameter(parameter: str, detail: str, bound: int | float | None = None) -> Problem:
    """400: ``parameter`` is malformed or out of its range (``bound`` named)."""
    return Problem("bad-parameter", detail, parameter=parameter, bound=bound)
