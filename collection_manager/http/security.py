"""Who may read: the bearer token, where ``serve`` may listen without one, TLS, and CORS.

- A token (``CM_HTTP_TOKEN``) is compared in constant time, so its answer times do not
  tell how much of a guess was right; it is never printed, logged or echoed.
- Without a token ``serve`` listens on loopback only: anyone who can reach a wider address
  could read every collection. Beyond loopback it refuses to start, in one line.
- TLS (``CM_HTTP_TLS_CERT_FILE``, ``CM_HTTP_TLS_KEY_FILE``): TLS 1.2 at least; the
  handshake runs in the connection's own thread, so a slow client never holds the others.
- CORS is off unless ``CM_HTTP_CORS_ORIGINS`` names origins: browsers then let pages of
  those origins read the API (with the token, when one is set).
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import ipaddress
import logging
import socket
import ssl
from pathlib import Path

from collection_manager.config.errors import ConfigError
from collection_manager.http.problems import Problem

logger = logging.getLogger(__name__)

REALM = "collection-manager"


def is_loopback(host: str) -> bool:
    """Whether every address ``host`` names is a loopback one (``""``: every interface)."""
    if not host:
        return False
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, None)
    except OSError:
        return False  # it cannot be bound either: the listener says so
    return bool(found) and all(ipaddress.ip_address(info[4][0]).is_loopback for info in found)


def check_exposure(host: str, address: str, token: str | None, tls: bool) -> None:
    """Refuses to listen beyond loopback without a token; warns of a token in clear text.

    Raises:
        ConfigError: one line naming the setting to set.
    """
    if is_loopback(host):
        return
    if not token:
        raise ConfigError(
            f"CM_HTTP_ADDRESS={address} listens beyond loopback, where anyone who reaches "
            "it could read every collection: set CM_HTTP_TOKEN (a bearer token every "
            "request must carry), or listen on 127.0.0.1"
        )
    if not tls:
        logger.warning(
            "CM_HTTP_ADDRESS=%s listens beyond loopback without TLS: the token crosses the "
            "network in clear text (set CM_HTTP_TLS_CERT_FILE and CM_HTTP_TLS_KEY_FILE, or "
            "put a TLS proxy in front)",
            address,
        )


def authorize(header: str | None, token: str | None) -> None:
    """Lets the request through when no token is set or ``header`` carries it.

    Raises:
        Problem: 401 with a ``WWW-Authenticate`` challenge; the detail never repeats
            what was sent.
    """
    if not token:
        return
    challenge = f'Bearer realm="{REALM}"'
    if header is None:
        raise Problem(
            "unauthorized",
            "this API needs a bearer token: send Authorization: Bearer <CM_HTTP_TOKEN>",
            parameter="Authorization",
            headers={"WWW-Authenticate": challenge},
        )
    scheme, _, given = header.strip().partition(" ")
    if scheme.lower() != "bearer" or not same_secret(given.strip(), token):
        raise Problem(
            "unauthorized",
            "the bearer token is not the one this server takes",
            parameter="Authorization",
            headers={"WWW-Authenticate": f'{challenge}, error="invalid_token"'},
        )


def same_secret(given: str, secret: str) -> bool:
    """Whether ``given`` is ``secret``, in time that tells nothing of either: their
    digests are compared, so not even the length of the secret shows."""
    digest = hashlib.sha256
    return hmac.compare_digest(digest(given.encode()).digest(), digest(secret.encode()).digest())


def tls_context(cert: Path | None, key: Path | None) -> ssl.SSLContext | None:
    """The server's TLS context, or None for plain HTTP.

    Raises:
        ConfigError: when only one of the two files is set, or they cannot be loaded.
    """
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        given, missing = (
            ("CM_HTTP_TLS_CERT_FILE", "CM_HTTP_TLS_KEY_FILE")
            if key is None
            else ("CM_HTTP_TLS_KEY_FILE", "CM_HTTP_TLS_CERT_FILE")
        )
        raise ConfigError(f"{given} is set but {missing} is not: TLS needs both")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ConfigError(
            f"CM_HTTP_TLS_CERT_FILE={cert}, CM_HTTP_TLS_KEY_FILE={key}: cannot load them: {why}"
        ) from None
    return context


@dataclasses.dataclass(frozen=True)
class Cors:
    """The origins whose pages may read the API (``*``: any); none: CORS off."""

    origins: frozenset[str]

    @classmethod
    def of(cls, setting: str) -> Cors:
        """From ``CM_HTTP_CORS_ORIGINS``: origins separated by commas."""
        return cls(frozenset(o.strip().rstrip("/") for o in setting.split(",") if o.strip()))

    @property
    def enabled(self) -> bool:
        return bool(self.origins)

    def allow(self, origin: str | None) -> str | None:
        """The ``Access-Control-Allow-Origin`` value for a request from ``origin``."""
        if origin is None or not self.origins:
            return None
        if "*" in self.origins:
            return "*"
        return origin if origin in self.origins else None
