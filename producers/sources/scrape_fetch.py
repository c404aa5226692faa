"""The fetch of a scrape: the target's URL checked, its exposition text read within bounds.

The target is not ours, so nothing it does may hold the agent up or make it spend without
bound: one deadline covers connecting and every read (a target that trickles bytes is cut at
it too), the body is read in chunks up to ``max_bytes``, and every way it can fail ends as a
:class:`ScrapeError` of one line. :class:`ScrapeLimits` holds every bound of a scrape, those
of the parse (``scrape.py``) too.
"""

from __future__ import annotations

import dataclasses
import http.client
import math
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable

from collection_manager.config.errors import ConfigError
from collection_manager.config.settings import redact_url
from collection_manager.core.errors import CollectionManagerError
from producers.sources.deadline_http import Deadline, opener

ACCEPT = "text/plain;version=0.0.4"
"""The text exposition format: the one format every Prometheus client library serves."""

_CHUNK_BYTES = 65_536


class ScrapeError(CollectionManagerError):
    """A scrape that failed; its message is one line naming what went wrong."""


@dataclasses.dataclass(frozen=True)
class ScrapeLimits:
    """What one scrape may cost at most.

    Attributes:
        timeout_s: the whole scrape: connect and every read, so that a target that trickles
            bytes is cut at this deadline too.
        max_bytes: body bytes read at most; one more is an error.
        max_samples: samples kept (after the filters); one more is an error.
        max_labels_chars: length of one sample's canonical label text; longer is an error.

    Raises:
        ConfigError: when a limit is not a positive (finite) number.
    """

    timeout_s: float = 5.0
    max_bytes: int = 10_000_000
    max_samples: int = 10_000
    max_labels_chars: int = 4_096

    def __post_init__(self) -> None:
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            # `not value > 0` also refuses NaN; an infinite timeout is no deadline at all.
            if not value > 0 or not math.isfinite(value):
                raise ConfigError(f"{field.name}={value!r}: must be a number greater than 0")


def check_target(url: str) -> str:
    """Validates a target URL before anything connects.

    Args:
        url: the value of ``--target``.

    Returns:
        ``url``, unchanged.

    Raises:
        ConfigError: when ``url`` is no ``http://`` or ``https://`` URL with a host (and a
            valid port, if it has one), or when it holds a user or password.
    """
    try:
        parts = urllib.parse.urlsplit(url)
        valid = parts.scheme in ("http", "https") and bool(parts.hostname)
        _ = parts.port  # raises ValueError for a port that is no number in 0..65535
    except ValueError:
        valid = False
    if not valid:
        raise ConfigError(
            f"--target {redact_url(url)}: must be an http:// or https:// URL with a host"
        )
    if "@" in parts.netloc:
        # urllib would not log in with it but take it for part of the host name, and fail
        # each scrape with a misleading "Name or service not known".
        raise ConfigError(f"--target {redact_url(url)}: a user or password is not supported")
    return url


def fetch(url: str, limits: ScrapeLimits, monotonic: Callable[[], float] = time.monotonic) -> str:
    """GETs ``url``'s exposition text within the limits.

    Reads until the end of the answer, the deadline (``limits.timeout_s`` after the call,
    for everything from connecting to the last byte) or ``limits.max_bytes + 1`` bytes.
    Resolving the host name is not bounded by the deadline (the stdlib offers no way).

    Args:
        url: an ``http://`` or ``https://`` URL (see :func:`check_target`).
        limits: the deadline and the bytes bound.
        monotonic: the clock of the deadline; tests pass a scripted one.

    Returns:
        The answer's body.

    Raises:
        ScrapeError: with one line: the target cannot be connected to, gives no full answer
            before the deadline, answers with an HTTP status of 400 or more, sends more
            than ``limits.max_bytes`` bytes or text that is not UTF-8.
    """
    deadline = Deadline(monotonic() + limits.timeout_s, monotonic)
    request = urllib.request.Request(url, headers={"Accept": ACCEPT})
    try:
        with opener(deadline).open(request, timeout=limits.timeout_s) as response:
            body = _read_body(response, limits)
    except urllib.error.HTTPError as exc:
        exc.close()
        raise ScrapeError(f"HTTP {exc.code} {exc.reason}") from None
    except urllib.error.URLError as exc:
        if isinstance(exc.reason, TimeoutError):
            raise _timed_out(limits) from exc
        raise ScrapeError(
            f"cannot connect to {redact_url(url)}: {reason_text(exc.reason)}"
        ) from exc
    except TimeoutError as exc:
        raise _timed_out(limits) from exc
    except (OSError, http.client.HTTPException) as exc:
        raise ScrapeError(f"the answer of {redact_url(url)} broke off: {reason_text(exc)}") from exc
    return _decode(body)


def _read_body(response: http.client.HTTPResponse, limits: ScrapeLimits) -> bytes:
    if response.length is not None and response.length > limits.max_bytes:
        raise _too_big(limits)  # announced: no need to read it first
    body = bytearray()
    while chunk := response.read1(min(_CHUNK_BYTES, limits.max_bytes + 1 - len(body))):
        body += chunk
        if len(body) > limits.max_bytes:
            raise _too_big(limits)
    return bytes(body)


def _decode(body: bytes) -> str:
    try:
        return body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScrapeError(f"answer is not UTF-8 text: {exc.reason} at byte {exc.start:,}") from None


def _timed_out(limits: ScrapeLimits) -> ScrapeError:
    return ScrapeError(f"no full answer within {limits.timeout_s:g} s")


def _too_big(limits: ScrapeLimits) -> ScrapeError:
    return ScrapeError(f"answer is over the bound of {limits.max_bytes:,} bytes")


def reason_text(reason: object) -> str:
    # "Connection refused" rather than "[Errno 111] Connection refused".
    if isinstance(reason, OSError) and reason.strerror:
        return reason.strerror
    return str(reason) or type(reason).__name__
