"""The OpenAPI 3.1 document of the API, served at ``/api/v1/openapi.json``.

Written here, beside the handlers it describes, and held to them by a property test
(schemathesis: every operation, generated parameters, each answer checked against its
schema and status codes). It describes the server as it runs: with a token set, every
operation requires the bearer scheme.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from collection_manager import release
from collection_manager.core.buckets import MAX_BUCKETS
from collection_manager.http.negotiation import ARROW, EVENT_STREAM, JSON, NDJSON
from collection_manager.http.params import MAX_WHERE_TERMS
from collection_manager.http.problems import KINDS, MEDIA_TYPE, TYPE_PREFIX

API = "/api/v1"
_NAME_PATTERN = "^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": f"#/components/schemas/{name}"}


def _nullable(kind: str) -> dict[str, Any]:
    return {"type": [kind, "null"]}


_INT = {"type": "integer"}
_STRING = {"type": "string"}
_AS_OF = {
    "description": "The time read at; of a bucketed collection, its cut: a time per bucket "
    "joined by commas, bucket 0 first (12,40,7).",
    "oneOf": [{"type": "integer", "minimum": 0}, {"type": "string", "pattern": "^[0-9,]+$"}],
}
_VALUE = {"type": ["string", "integer", "number", "boolean", "null"]}

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
    "Column": {
        "type": "object",
        "required": ["name", "type", "nullable", "indexed"],
        "properties": {
            "name": _STRING,
            "type": {"enum": ["long", "double", "boolean", "string"]},
            "nullable": {"type": "boolean"},
            "indexed": {"type": "boolean"},
        },
    },
    "Collection": {
        "type": "object",
        "required": [
            "name",
            "rows",
            "time",
            "columns",
            "indexed_columns",
            "buckets",
            "bucket_column",
        ],
        "properties": {
            "name": _STRING,
            "rows": {"type": "integer", "description": "Distinct rows (a bucketed one: the sum)."},
            "time": {
                "type": "integer",
                "description": "Latest readable time (a bucketed one: its buckets' sum).",
            },
            "columns": {"type": "array", "items": _ref("Column")},
            "indexed_columns": {"type": "array", "items": _STRING},
            "buckets": {"type": "integer", "minimum": 1, "maximum": MAX_BUCKETS},
            "bucket_column": _nullable("string"),
        },
    },
    "CollectionDetail": {
        "allOf": [
            _ref("Collection"),
            {
                "type": "object",
                "required": ["counters", "ttl", "row_schema", "bucket_rows"],
                "properties": {
                    "counters": {"type": "object", "additionalProperties": _INT},
                    "ttl": {
                        "type": "object",
                        "required": ["rows", "next_expiry_ms"],
                        "properties": {"rows": _INT, "next_expiry_ms": _nullable("integer")},
                    },
                    "row_schema": {"type": "object"},
                    "bucket_rows": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["bucket", "rows", "time"],
                            "properties": {"bucket": _INT, "rows": _INT, "time": _INT},
                        },
                    },
                },
            },
        ]
    },
    "Rows": {
        "type": "object",
        "required": ["collection", "as_of", "rows"],
        "properties": {
            "collection": _STRING,
            "as_of": _AS_OF,
            "rows": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["row", "count"],
                    "properties": {
                        "row": {"type": "object", "additionalProperties": _VALUE},
                        "count": {
                            "type": "integer",
                            "description": "The row's multiplicity (negative after invalid "
                            "retractions).",
                        },
                    },
                },
            },
        },
    },
    "Replica": {
        "type": "object",
        "required": [
            "replica_id",
            "epoch",
            "state",
            "lease_expires_ms",
            "lease_left_ms",
            "last_heartbeat_ms",
            "added_ms",
            "reason",
        ],
        "properties": {
            "replica_id": _STRING,
            "epoch": _INT,
            "state": {"enum": ["active", "removing", "removed"]},
            "lease_expires_ms": _nullable("integer"),
            "lease_left_ms": _nullable("integer"),
            "last_heartbeat_ms": _nullable("integer"),
            "added_ms": _INT,
            "reason": _STRING,
        },
    },
    "Status": {
        "type": "object",
        "required": [
            "consumer",
            "controller",
            "other_topics",
            "unpublished_dead_letters",
            "collections",
        ],
        "properties": {
            "consumer": {
                "type": "object",
                "description": "The consumer of the topic: state is running, retrying, "
                "stopped (its heartbeat key expired) or unknown (it never beat); lag_total "
                "and lag are null when Kafka is not reachable, and kafka_detail says why.",
                "required": [
                    "topic",
                    "state",
                    "kafka",
                    "lag_total",
                    "lag",
                    "batches",
                    "dead_letters",
                ],
                "properties": {
                    "topic": _STRING,
                    "state": _STRING,
                    "state_since_ms": _nullable("integer"),
                    "last_seen_ms": _nullable("integer"),
                    "kafka": {
                        "enum": ["reachable", "unreachable", "not running", "not configured"]
                    },
                    "kafka_detail": _nullable("string"),
                    "batches": _INT,
                    "dead_letters": _INT,
                    "control_requests": _INT,
                    "lag_total": _nullable("integer"),
                    "lag": {
                        "type": ["array", "null"],
                        "items": {
                            "type": "object",
                            "required": ["topic", "partition", "lag"],
                            "properties": {"topic": _STRING, "partition": _INT, "lag": _INT},
                        },
                    },
                },
            },
            "controller": {
                "type": "object",
                "required": ["namespace", "state"],
                "properties": {
                    "namespace": _STRING,
                    "state": {"enum": ["running", "stopped", "unknown"]},
                    "last_seen_ms": _nullable("integer"),
                    "last_check_ms": _nullable("integer"),
                },
            },
            "other_topics": {"type": "array", "items": _STRING},
            "unpublished_dead_letters": {
                "type": "object",
                "required": ["count", "newest"],
                "properties": {"count": _INT, "newest": {"type": "array"}},
            },
            "collections": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["name", "rows", "time", "counters"],
                    "properties": {
                        "name": _STRING,
                        "rows": _INT,
                        "time": _INT,
                        "counters": {"type": "object", "additionalProperties": _INT},
                    },
                },
            },
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


def document(token: bool) -> dict[str, Any]:
    """The OpenAPI document; ``token``: the server asks for a bearer token."""
    rows_content = {
        JSON: {"schema": _ref("Rows")},
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
    paths = {
        f"{API}/collections": _operation(
            "Every collection",
            "Name, rows, time, columns, indexed columns, buckets and bucket column of each.",
            _json(
                "The collections",
                {
                    "type": "object",
                    "required": ["collections"],
                    "properties": {"collections": {"type": "array", "items": _ref("Collection")}},
                },
            ),
        ),
        f"{API}/collections/{{name}}": _operation(
            "One collection",
            "Its columns, counters, row TTLs, row schema and, when bucketed, each bucket's rows.",
            _json("The collection", _ref("CollectionDetail")),
            [_NAME],
            (404,),
        ),
        f"{API}/collections/{{name}}/rows": _operation(
            "A collection's rows at one consistent time",
            "As query reads them, in bounded steps; a bucketed collection at one consistent "
            "cut. JSON holds at most CM_HTTP_MAX_ROWS rows (more: 422); NDJSON and Arrow "
            "stream. Accept chooses.",
            {"description": "The rows and as_of", "content": rows_content},
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
        f"{API}/replicas": _operation(
            "The replicas",
            "Epoch, state, lease expiry and what is left of it, last heartbeat.",
            _json(
                "The replicas",
                {
                    "type": "object",
                    "required": ["at_ms", "namespace", "replicas"],
                    "properties": {
                        "at_ms": _INT,
                        "namespace": _STRING,
                        "replicas": {"type": "array", "items": _ref("Replica")},
                    },
                },
            ),
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
            _json("The status", _ref("Status")),
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
    if not token:
        for path in paths.values():
            path["get"]["responses"].pop("401")
    spec: dict[str, Any] = {
        "openapi": "3.1.0",
        "info": {
            "title": "collection-manager",
            "version": release.version(),
            "description": "Read-only: the storage collections, their rows and changes, the "
            "replicas and the status (docs/operations.md, Reading over HTTP).",
        },
        "paths": paths,
        "components": {"schemas": SCHEMAS},
    }
    if token:
        spec["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        spec["security"] = [{"bearer": []}]
    return spec
