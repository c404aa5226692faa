"""What a failure of a handler becomes: the problem its client gets, and one log line.

The project's own errors say what is wrong in words meant for the user, so their message is
the detail (a Redis URL in it redacted); a change log trimmed past the position asked for
is 410. A fault of Redis is 503: the store cannot answer now, and the client may try again.
Anything else is a bug: 500 with its type only, and its message on one line of the
server's log; never a traceback, to the client or the log.
"""

from __future__ import annotations

import logging
import re

from collection_manager.config import redact_url
from collection_manager.core.cut import CutError
from collection_manager.core.errors import (
    CollectionManagerError,
    FilterError,
    InfrastructureError,
    InvalidNameError,
    LogTrimmedError,
    UnknownCollectionError,
)
from collection_manager.core.stepped_read import SteppedReadError
from collection_manager.http.problems import Problem
from collection_manager.storage.client import REDIS_FAULTS

logger = logging.getLogger(__name__)

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"]+")
_AGAIN = {"Retry-After": "1"}


def redact(text: str) -> str:
    """``text`` with the password of every URL in it masked."""
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


def problem_of(exc: BaseException) -> Problem:
    """The problem a failure is to its client (logged, when it is no fault of the request)."""
    if isinstance(exc, Problem):
        return exc
    if isinstance(exc, InvalidNameError | UnknownCollectionError):
        return Problem("unknown-collection", redact(exc.message), parameter="name")
    if isinstance(exc, FilterError):
        return Problem("bad-parameter", redact(exc.message), parameter="where")
    if isinstance(exc, LogTrimmedError):
        # The change log's reader: the changes after a position are gone (the change feed
        # words its own, naming the position and what to read instead).
        return Problem("log-trimmed", redact(exc.message))
    if isinstance(exc, SteppedReadError | CutError):
        # No consistent read this time (a failover, a settle overtaking it): again, soon.
        return Problem("unavailable", redact(exc.message), headers=dict(_AGAIN))
    if isinstance(exc, InfrastructureError):
        logger.warning("answered 503: %s", redact(exc.message))
        return Problem("unavailable", redact(exc.message), headers=dict(_AGAIN))
    if isinstance(exc, REDIS_FAULTS):
        detail = redact(f"Redis does not answer ({type(exc).__name__}: {exc})")
        logger.warning("answered 503: %s", detail)
        return Problem("unavailable", detail, headers=dict(_AGAIN))
    if isinstance(exc, CollectionManagerError):
        # The store cannot serve this version (its functions not loaded, another layout):
        # the operator's to fix, and the message says how.
        logger.warning("answered 503: %s", redact(exc.message))
        return Problem("unavailable", redact(exc.message))
    logger.error("answered 500: %s: %s", type(exc).__name__, redact(str(exc))[:500])
    return Problem(
        "internal",
        f"the server failed with an unexpected {type(exc).__name__}; its log has the line",
    )
