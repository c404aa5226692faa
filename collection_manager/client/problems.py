"""A refusal of the server as the exception a program catches (pure: no I/O).

The kind in the document's ``type`` (``urn:collection-manager:problem:KIND``) picks the
class; a kind this client does not know yet (a newer server) falls back on the status, as
does an answer that is no problem document at all (a proxy's HTML page, an empty body),
whose detail is then the start of its text. The document's ``parameter`` and ``bound`` are
kept only when they are of the type the API documents, so a program may trust them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

from collection_manager.client import errors

MEDIA_TYPE = "application/problem+json"
TYPE_PREFIX = "urn:collection-manager:problem:"

KIND_CLASSES: dict[str, type[errors.ProblemError]] = {
    "bad-parameter": errors.BadRequest,
    "unauthorized": errors.Unauthorized,
    "not-found": errors.NotFound,
    "unknown-collection": errors.UnknownCollection,
    "method-not-allowed": errors.NotAcceptable,
    "not-acceptable": errors.NotAcceptable,
    "log-trimmed": errors.LogTrimmed,
    "too-many-rows": errors.TooManyRows,
    "too-many-requests": errors.TooManyRequests,
    "too-many-streams": errors.TooManyRequests,
    "unavailable": errors.ServiceUnavailable,
    "timeout": errors.ServerTimeout,
    "internal": errors.ServerError,
}
STATUS_CLASSES: dict[int, type[errors.ProblemError]] = {
    400: errors.BadRequest,
    401: errors.Unauthorized,
    404: errors.NotFound,
    405: errors.NotAcceptable,
    406: errors.NotAcceptable,
    410: errors.LogTrimmed,
    422: errors.TooManyRows,
    429: errors.TooManyRequests,
    503: errors.ServiceUnavailable,
    504: errors.ServerTimeout,
}
# How much of an answer that is no problem document its detail quotes.
_QUOTED = 200


def class_of(kind: str | None, status: int) -> type[errors.ProblemError]:
    """The exception class of a problem of ``kind`` (None: unknown) answered with ``status``."""
    if kind is not None and kind in KIND_CLASSES:
        return KIND_CLASSES[kind]
    if status in STATUS_CLASSES:
        return STATUS_CLASSES[status]
    return errors.ServerError if status >= 500 else errors.ProblemError


def retry_after(value: str | None) -> float | None:
    """``Retry-After`` in seconds (its delay-seconds form; a date or nonsense: None)."""
    if value is None:
        return None
    try:
        seconds = float(value.strip())
    except ValueError:
        return None
    return seconds if math.isfinite(seconds) and seconds >= 0 else None


def _text(document: Mapping[str, Any], field: str) -> str | None:
    value = document.get(field)
    return value if isinstance(value, str) else None


def _bound(document: Mapping[str, Any]) -> int | float | None:
    value = document.get("bound")
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return value


def from_document(
    document: Mapping[str, Any],
    status: int,
    url: str,
    headers: Mapping[str, str] | None = None,
    collection: str | None = None,
) -> errors.ProblemError:
    """The exception for a problem ``document`` answered with ``status`` (the document's
    own status wins when it has one, as an ``error`` event of a change stream carries it)."""
    headers = headers or {}
    own_status = document.get("status")
    if isinstance(own_status, int) and not isinstance(own_status, bool):
        status = own_status
    type_uri = _text(document, "type")
    kind = type_uri[len(TYPE_PREFIX) :] if type_uri and type_uri.startswith(TYPE_PREFIX) else None
    cls = class_of(kind, status)
    return cls(
        status=status,
        type=type_uri,
        title=_text(document, "title") or f"HTTP {status}",
        detail=_text(document, "detail") or "the server gave no detail",
        url=url,
        parameter=_text(document, "parameter"),
        bound=_bound(document),
        instance=_text(document, "instance"),
        retry_after=retry_after(_header(headers, "Retry-After")),
        collection=collection,
    )


def from_answer(
    status: int,
    reason: str,
    content_type: str | None,
    body: bytes,
    url: str,
    headers: Mapping[str, str] | None = None,
    collection: str | None = None,
) -> errors.ProblemError:
    """The exception for an error answer: its problem document when it is one, else one
    made of its status, reason and the start of its text."""
    media = (content_type or "").split(";", 1)[0].strip().lower()
    if media in (MEDIA_TYPE, "application/json"):
        try:
            document = json.loads(body)
        except ValueError:
            document = None
        if isinstance(document, dict) and (
            media == MEDIA_TYPE or str(document.get("type", "")).startswith(TYPE_PREFIX)
        ):
            return from_document(document, status, url, headers, collection)
    text = body[:_QUOTED].decode("utf-8", errors="replace").strip()
    detail = f"not a problem document ({media or 'no media type'}): {text!r}"
    document = {"title": reason or f"HTTP {status}", "detail": detail}
    return from_document(document, status, url, headers, collection)


def _header(headers: Mapping[str, str], name: str) -> str | None:
    lowered = name.lower()
    for key, value in headers.items():
        if key.lower() == lowered:
            return value
    return None
