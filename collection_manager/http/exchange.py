"""A request as the API's handlers see it, and the answer they give.

Handlers never touch a socket: the server (``server.py``) parses the request, hands a
:class:`Request` to the handler its route names, and writes the :class:`Answer` back,
whole or, for a body that is an iterator, chunk by chunk as the handler makes it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from collection_manager.core import json_text
from collection_manager.http.negotiation import JSON


@dataclasses.dataclass(frozen=True)
class Request:
    """What was asked: ``path`` without the query, ``query`` still percent-encoded,
    ``headers`` looked up without regard to case, ``arguments`` the parts of the path its
    route names (``{name}``)."""

    method: str
    path: str
    query: str = ""
    headers: Mapping[str, str] = dataclasses.field(default_factory=dict)
    arguments: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def header(self, name: str) -> str | None:
        """A header's value (None when absent), whatever case it was sent in."""
        lowered = name.lower()
        for key, found in self.headers.items():
            if key.lower() == lowered:
                return found
        return None


@dataclasses.dataclass
class Answer:
    """What to send: a status, a media type and a body; an iterable body is streamed.

    ``finished`` runs once the body is written (or the client went away), for what the
    answer held while it was written. ``route`` is the template of the route that answered
    (``other`` for none), as metrics and logs name it.
    """

    body: bytes | Iterable[bytes]
    content_type: str = JSON
    status: int = 200
    headers: dict[str, str] = dataclasses.field(default_factory=dict)
    finished: Callable[[], None] | None = None
    route: str = "other"

    @property
    def streamed(self) -> bool:
        return not isinstance(self.body, bytes)


def json_answer(document: Any, status: int = 200) -> Answer:
    """A JSON document as an answer."""
    body = json_text.compact(document) + b"\n"
    return Answer(body, JSON, status)
