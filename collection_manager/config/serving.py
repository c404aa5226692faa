"""The settings of the processes that serve the collections out of Redis: the read-only
HTTP API (``server run``, :class:`HttpConfig`) and the sinks to Kafka topics (``sinks run``,
:class:`SinkConfig`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from collection_manager.config.settings import setting


@dataclasses.dataclass(frozen=True)
class HttpConfig:
    """`server run`, the read-only HTTP API: where it listens, who may read, and its bounds."""

    http_address: str = setting(
        "127.0.0.1:8080",
        "host:port where `server run` answers the HTTP API, /metrics, /healthz and /readyz "
        "(port "
        "0: any free one, printed at start). Beyond loopback it needs CM_HTTP_TOKEN.",
    )
    http_token: str | None = dataclasses.field(
        default=None,
        repr=False,
        metadata={
            "help": "Bearer token every /api/ request must carry (Authorization: Bearer "
            "TOKEN), compared in constant time; never printed. Unset: no token asked, "
            "which `server run` allows on a loopback address only."
        },
    )
    http_tls_cert_file: Path | None = setting(
        None,
        "PEM file of the certificate (and its chain) `server run` answers HTTPS with; needs "
        "CM_HTTP_TLS_KEY_FILE. Unset: plain HTTP.",
    )
    http_tls_key_file: Path | None = setting(
        None, "PEM file of that certificate's private key (unencrypted)."
    )
    http_cors_origins: str = setting(
        "",
        "Origins whose pages may read the API from a browser (CORS), separated by commas, "
        "e.g. https://ops.example.com; * for any. Empty: no CORS header, so browsers let "
        "only pages of the API's own origin read it.",
    )
    http_max_rows: int = setting(
        10_000,
        "Most rows a JSON answer of /rows holds; a read that finds more is refused (422) "
        "naming it: ask for NDJSON or Arrow (streamed, no bound) or give limit.",
    )
    http_max_streams: int = setting(
        32,
        "Most change streams (/changes) open at once; one more is refused (503) naming it.",
    )
    http_max_requests: int = setting(
        16,
        "Most other requests answered at once (each a thread, a Redis connection and, for "
        "rows, the rows it read); one more is refused (503) naming it.",
    )
    http_request_timeout_s: float = setting(
        30.0,
        "How long a request may take to read its answer (rows, status, replicas) before "
        "it is refused (504) naming it; a read meets a Redis failover patiently until then. "
        "Also how long a client may leave a write to it unread before its connection is "
        "closed.",
    )
    http_keepalive_s: float = setting(
        15.0,
        "A change stream without changes sends a comment this often, so proxies and "
        "clients keep it open and a client that went away is noticed.",
    )


@dataclasses.dataclass(frozen=True)
class SinkConfig:
    """`sinks run`: a collection's changes to a Kafka topic (docs/concepts/sinks.md)."""

    sink_metrics_address: str = setting(
        "",
        "host:port where `sinks run` serves /metrics, /healthz and /readyz (port 0: any free "
        "one, printed at start); empty: no listener.",
    )
    sink_poll_interval_ms: int = setting(
        200,
        "How often a sink asks its collection for changes when it found none: a change "
        "reaches the sink's topic 0 to this long after it is readable in Redis.",
    )
    sink_max_transaction_changes: int = setting(
        100_000,
        "Most changes of one Kafka transaction. An unbucketed collection's changes are cut "
        "at time boundaries into transactions of at most this many; a bucketed "
        "collection's step (from one consistent cut to the next) is one transaction, and "
        "a sink that fell behind by more stops, saying so (docs/concepts/sinks.md).",
    )
