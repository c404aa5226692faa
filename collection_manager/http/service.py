"""``serve`` put together: the settings checked, Redis connected, the API listening.

The checks come first and each is one line naming its setting: a bound below 1, TLS with
one file of two, or an address beyond loopback without a token (``security.py``). Nothing
listens until all pass.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from collection_manager.config import HttpConfig, redact_url
from collection_manager.config.errors import ConfigError
from collection_manager.http.api import Api
from collection_manager.http.app import SPARE_CONNECTIONS
from collection_manager.http.context import Sources
from collection_manager.http.security import check_exposure, tls_context
from collection_manager.http.server import SETTING, ApiServer
from collection_manager.observability.endpoint import parse_address
from collection_manager.observability.health import Health
from collection_manager.storage.client import connected_client

# How long the accept loop may be silent before /healthz says the process is not live.
LOOP_BOUND_S = 30.0


def check_settings(config: HttpConfig) -> None:
    """Refuses settings ``serve`` cannot run with, naming each.

    Raises:
        ConfigError: for a count below 1 or a time that is not above 0.
    """
    counts = {
        "CM_HTTP_MAX_ROWS": config.http_max_rows,
        "CM_HTTP_MAX_STREAMS": config.http_max_streams,
        "CM_HTTP_MAX_REQUESTS": config.http_max_requests,
    }
    for name, value in counts.items():
        if value < 1:
            raise ConfigError(f"{name}={value}: must be at least 1")
    times = {
        "CM_HTTP_REQUEST_TIMEOUT_S": config.http_request_timeout_s,
        "CM_HTTP_KEEPALIVE_S": config.http_keepalive_s,
    }
    for name, seconds in times.items():
        if not 0 < seconds < float("inf"):  # also refuses nan
            raise ConfigError(f"{name}={seconds}: must be more than 0 seconds")


@dataclasses.dataclass
class Service:
    """A running ``serve``: its server and what it holds."""

    server: ApiServer
    sources: Sources

    @property
    def url(self) -> str:
        return self.server.url

    def close(self) -> None:
        """Stops the server (its streams end) and closes the Redis connections."""
        self.server.close()
        self.sources.client.close()


def start(
    config: HttpConfig,
    redis_url: str,
    kafka_bootstrap: str | None,
    topic: str,
    namespace: str,
    services_file: Path | None = None,
) -> Service:
    """Checks the settings, connects to Redis and listens.

    Raises:
        ConfigError: for settings it cannot run with, naming the setting.
        InfrastructureError: when Redis does not answer.
    """
    check_settings(config)
    host, _ = parse_address(config.http_address, SETTING)
    tls = tls_context(config.http_tls_cert_file, config.http_tls_key_file)
    check_exposure(host, config.http_address, config.http_token, tls is not None)
    # A socket timeout: a Redis that stops answering mid-call must not hold a thread for
    # good (a read past its deadline ends with it, and gives back its slot).
    client = connected_client(redis_url, socket_timeout=config.http_request_timeout_s)
    sources = Sources(client, redis_url, kafka_bootstrap or None, topic, namespace, services_file)
    api = Api(sources, config, _health(sources, redis_url))
    try:
        return Service(_server(config, api, tls is not None).start(), sources)
    except BaseException:
        client.close()
        raise


def _health(sources: Sources, redis_url: str) -> Health:
    """What ``/healthz`` and ``/readyz`` check: the accept loop's pace and Redis."""
    health = Health()
    health.watch_loop("http", max_age_s=LOOP_BOUND_S)

    def redis_answers() -> str | None:
        return None if sources.answers() else f"Redis at {redact_url(redis_url)} does not answer"

    health.add_check("redis", redis_answers)
    return health


def _server(config: HttpConfig, api: Api, tls: bool) -> ApiServer:
    """The server of ``api``, not started: a connection for each request and stream slot,
    and spare ones."""
    connections = config.http_max_requests + config.http_max_streams + SPARE_CONNECTIONS
    files = (config.http_tls_cert_file, config.http_tls_key_file) if tls else None
    return ApiServer(
        config.http_address,
        api,
        files,  # type: ignore[arg-type]  # both set: tls_context checked them
        config.http_request_timeout_s,
        config.http_keepalive_s,
        connections,
    )
