"""``serve``'s Prometheus metrics, at its own ``/metrics``. Labels are routes (the path
templates, ``other`` for any path that is none), methods, status codes, problem kinds and
media types: a bounded set, and nothing a client typed."""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from collection_manager.observability.endpoint import process_registry

REGISTRY = process_registry()  # what serve's /metrics shows

REQUESTS = Counter(
    "cm_http_requests",
    "Requests answered, by route, method and status code.",
    ["route", "method", "code"],
    registry=REGISTRY,
)
ERRORS = Counter(
    "cm_http_errors",
    "Requests refused or failed, by route and problem kind (the last part of the problem "
    "document's type: bad-parameter, unauthorized, too-many-rows, timeout, ...).",
    ["route", "problem"],
    registry=REGISTRY,
)
DURATION = Histogram(
    "cm_http_request_duration_seconds",
    "Time from a request's arrival to the end of its answer; of a change stream, to its "
    "head (its reads done, its events not counted).",
    ["route"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0),
    registry=REGISTRY,
)
STREAMS_OPEN = Gauge(
    "cm_http_streams_open",
    "Change streams open now (at most CM_HTTP_MAX_STREAMS).",
    registry=REGISTRY,
)
CHANGES = Counter(
    "cm_http_changes_sent",
    "Changes sent to the clients of change streams.",
    registry=REGISTRY,
)
ROWS = Counter(
    "cm_http_rows_answered",
    "Rows answered by /rows, by media type.",
    ["format"],
    registry=REGISTRY,
)
CONNECTIONS_REFUSED = Counter(
    "cm_http_connections_refused",
    "Requests refused (503) at once because the server served its most at once.",
    registry=REGISTRY,
)
