"""The OpenAPI 3.1 document of the API, served at ``/api/v1/openapi.json``.

The answers' schemas are made from their models (``collection_manager/answers``), the
one definition the handlers, the commands' JSON and the client share; the operations and
their parameters are written here, beside the handlers they describe. A property test
holds them to the server (schemathesis: every operation, generated parameters, each
answer checked against its schema and status codes). It describes the server as it runs:
with a token set, every operation requires the bearer scheme.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collection_manager import release
from collection_manager.answers import MODELS, schemas
from collection_manager.answers.models import CollectionDetail, CollectionList, ReplicaList
from collection_manager.answers.rows import Rows
from collection_manager.answers.schema import ref
from collection_manager.answers.status import Status
from collection_manager.http.negotiation import ARROW, EVENT_STREAM, JSON, NDJSON
from collection_manager.http.params import MAX_WHERE_TERMS
from collection_manager.http.problems import KINDS, MEDIA_TYPE, TYPE_PREFIX

API = "/api/v1"
_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


_STRING = {"type": "string"}

# The answers' schemas are made from their models (collection_manager/answers); the
# problem document is RFC 9457's, written here.
SCHEMAS: dict[str, Any] = {
    "Problem": {
        "type": "object",
        "description": "RFC 9457. type is "
        + TYPE_PREFIX
        + "KIND, KIND one of: "
        + ", ".join(KINDS),
        "required": ["type", "title", "status", "detail"],
        "properties": {
            "type": {"type": "string", "enum": [TYPE_PREFIX + kind for kind in KINDS]},
            "title": _STRING,
            "status": {"type": "integer", "minimum": 400, "maximum": 599},
            "detail": _STRING,
            "instance": _STRING,
            "parameter": {"type": "string", "description": "The parameter at fault."},
            "bound": {"type": "number", "description": "The limit that was broken."},
        },
    },
}


def _problems(*statuses: int) -> dict[str, Any]:
    kinds = {status: [k for k, (s, _) in KINDS.items() if s == status] for status in statuses}
    return {
        str(status): {
            "description": "; ".join(KINDS[kind][1] for kind in kinds[status]) or "A problem",
            "content": {MEDIA_TYPE: {"schema": _ref("Problem")}},
        }
        for status in statuses
    }


def _json(description: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"description": description, "content": {JSON: {"schema": schema}}}


_NAME = {
    "name": "name",
    "in": "path",
    "required": True,
    "description": "The collection's name (collections list them).",
    "schema": {"type": "string", "pattern": _NAME_PATTERN},
}
# Refusals any operation may answer: the token, the bounds, the store, a bug.
_ALWAYS = (500, 503, 504)


def _operation(
    summary: str,
    description: str,
    ok: dict[str, Any],
    parameters: Sequence[dict[str, Any]] = (),
    problems: tuple[int, ...] = (),
) -> dict[str, Any]:
    return {
        "get": {
            "summary": summary,
            "description": description,
            "parameters": list(parameters),
            "responses": {"200": ok, **_problems(*sorted({401, *problems, *_ALWAYS}))},
        }
    }


def _rows_content() -> dict[str, Any]:
    """The rows' answer by media type: JSON whole, NDJSON and Arrow streamed."""
    return {
        JSON: {"schema": ref(Rows)},
        NDJSON: {
            "schema": {
                "type": "string",
                "description": 'A line {"collection", "as_of"}, then a line {"row", "count"} '
                "per row.",
            }
        },
        ARROW: {
            "schema": {
                "type": "string",
                "format": "binary",
                "description": "An Arrow IPC stream: the columns and the multiplicity "
                "(count, or (count) when a column is named count); its schema's metadata "
                "holds collection and as_of.",
            }
        },
    }


def _collection_paths() -> dict[str, Any]:
    """The collections' list and one collection's detail."""
    return {
        f"{API}/collections": _operation(
            "Every collection",
            "Name, rows, time, columns, indexed columns, buckets and bucket column of each.",
            _json("The collections", ref(CollectionList)),
        ),
        f"{API}/collections/{{name}}": _operation(
            "One collection",
            "Its columns, counters, row TTLs, row schema and, when bucketed, each bucket's rows.",
            _json("The collection", ref(CollectionDetail)),
            [_NAME],
            (404,),
        ),
    }


def _rows_path() -> dict[str, Any]:
    """A collection's rows at one time, filtered by ``where`` and bounded by ``limit``."""
    return {
        f"{API}/collections/{{name}}/rows": _operation(
            "A collection's rows at one consistent time",
            "As query reads them, in bounded steps; a bucketed collection at one consistent "
            "cut. JSON holds at most CM_HTTP_MAX_ROWS rows (more: 422); NDJSON and Arrow "
            "stream. Accept chooses.",
            {"description": "The rows and as_of", "content": _rows_content()},
            [
                _NAME,
                {
                    "name": "where",
                    "in": "query",
                    "description": "COLUMN<op>VALUE, op one of = != < <= > >= ^= (query "
                    "--where's terms); repeat it: all must hold.",
                    "style": "form",
                    "explode": True,
                    "schema": {
                        "type": "array",
                        "maxItems": MAX_WHERE_TERMS,
                        "items": {"type": "string"},
                    },
                },
                {
                    "name": "limit",
                    "in": "query",
                    "description": "At most this many rows, the first the read finds.",
                    "schema": {"type": "integer", "minimum": 1, "maximum": 2**53 - 1},
                },
            ],
            (400, 404, 406, 422),
        ),
    }


def _changes_path() -> dict[str, Any]:
    """A collection's change feed (Server-Sent Events), resumed by position."""
    return {
        f"{API}/collections/{{name}}/changes": _operation(
            "A collection's changes as they come (Server-Sent Events)",
            "After Last-Event-ID, since, or now: an event position (id: the start), then "
            "events changes ({as_of, changes}; id: the position they reach), keep-alive "
            "comments, and event error with a problem when the feed cannot go on.",
            {
                "description": "The event stream",
                "content": {EVENT_STREAM: {"schema": {"type": "string"}}},
            },
            [
                _NAME,
                {
                    "name": "since",
                    "in": "query",
                    "description": "Changes after this position: an as_of (a time, or of a "
                    "bucketed collection a cut, or 0 for its start). Default: now.",
                    "schema": {"type": "string"},
                },
                {
                    "name": "Last-Event-ID",
                    "in": "header",
                    "description": "The id of the last event received; wins over since.",
                    "schema": {"type": "string"},
                },
            ],
            (400, 404, 406, 410),
        ),
    }


def _process_paths() -> dict[str, Any]:
    """The replicas, the status and this document."""
    return {
        f"{API}/replicas": _operation(
            "The replicas",
            "Epoch, state, lease expiry and what is left of it, last heartbeat.",
            _json("The replicas", ref(ReplicaList)),
            [
                {
                    "name": "all",
                    "in": "query",
                    "description": "Also the removed replicas the retention keeps.",
                    "schema": {"type": "boolean"},
                }
            ],
            (400,),
        ),
        f"{API}/status": _operation(
            "The consumer, the controller, dead letters and collections",
            "What status shows: a process whose heartbeat stopped is stopped.",
            _json("The status", ref(Status)),
            [
                {
                    "name": "topic",
                    "in": "query",
                    "description": "The consumer of this topic (default CM_TOPIC).",
                    "schema": {"type": "string", "pattern": "^[A-Za-z0-9._-]{1,249}$"},
                }
            ],
            (400,),
        ),
        f"{API}/openapi.json": _operation(
            "This document", "The OpenAPI document of the API.", _json("It", {"type": "object"})
        ),
    }


def _paths(token: bool) -> dict[str, Any]:
    """Every operation, in the document's order; without a token none answers 401."""
    paths = {**_collection_paths(), **_rows_path(), **_changes_path(), **_process_paths()}
    if not token:
        for path in paths.values():
            path["get"]["responses"].pop("401")
    return paths


def document(token: bool) -> dict[str, Any]:
    """The OpenAPI document; ``token``: the server asks for a bearer token."""
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "collection-manager",
            "version": release.version(),
            "description": "Read-only: the storage collections, their rows and changes, the "
            "replicas and the status (docs/operations.md, Reading over HTTP).",
        },
        "paths": _paths(token),
        "components": {"schemas": {**schemas(*MODELS), **SCHEMAS}},
    }
    if token:
        spec["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        spec["security"] = [{"bearer": []}]
    return spec
