"""What the CLI prints instead of a traceback: one ``error:`` line per fault.

Every project error, every Redis or Kafka fault, and Ctrl-C end the command with one line
and a non-zero code; ``-v`` adds the chain of causes. A reader that went away (``| head``)
is no fault: the command ends quietly with ``PIPE_CLOSED``. Whatever is
printed goes through :func:`redact`, so a password in a URL never reaches the terminal.
"""

from __future__ import annotations

import re

from confluent_kafka import KafkaException

from collection_manager.config import redact_url
from collection_manager.core.errors import CollectionManagerError
from collection_manager.storage.client import REDIS_FAULTS

# Exit codes: 1 for a fault of the command's input or services, 2 for a command line that
# is no valid use (as argparse exits), 130 for Ctrl-C, and 141 (128 + SIGPIPE) when the
# reader of stdout went away: the status a shell shows for git or coreutils' cat stopped
# by a closed pipe, so `set -o pipefail` treats all of them alike.
FAILED = 1
USAGE = 2
INTERRUPTED = 130
PIPE_CLOSED = 141

_URL = re.compile(r"\b[a-z][a-z0-9+.-]*://[^\s'\"]+")

SERVICE_FAULTS: tuple[type[BaseException], ...] = (
    CollectionManagerError,
    *REDIS_FAULTS,
    KafkaException,
    OSError,
)


def redact(text: str) -> str:
    """``text`` with the password of every URL in it masked."""
    return _URL.sub(lambda match: redact_url(match.group(0)), text)


def describe(exc: BaseException) -> str:
    """One line saying what failed and, for a service fault, what to check."""
    if isinstance(exc, CollectionManagerError):
        return redact(str(exc))
    if isinstance(exc, REDIS_FAULTS):
        # Connecting says "Redis at URL does not answer" (storage/client.py); this is a
        # fault after that, mid-command.
        return redact(
            f"Redis stopped answering ({type(exc).__name__}: {exc}); check CM_REDIS_URL or "
            "`collection-manager infra status`"
        )
    if isinstance(exc, KafkaException):
        return redact(
            f"Kafka failed ({exc}); check CM_KAFKA_BOOTSTRAP or `collection-manager infra status`"
        )
    return redact(f"{type(exc).__name__}: {exc}")


def causes(exc: BaseException) -> list[str]:
    """The chain of causes below ``exc``, one line each, for ``-v``."""
    lines: list[str] = []
    current = exc.__cause__ or exc.__context__
    while current is not None and len(lines) < 10:
        lines.append(redact(f"caused by {type(current).__name__}: {current}"))
        current = current.__cause__ or current.__context__
    return lines
