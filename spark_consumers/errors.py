"""Errors of the Spark job."""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ConsumerError(CollectionManagerError):
    """The consumer's streaming query stopped with an error."""


class ProgressMismatchError(CollectionManagerError):
    """Redis's progress and watermarks were written for another Kafka cluster.

    Not a fault to wait out: ``consumer run`` stops and says how to reset on purpose.
    """


# Python's own header of a traceback, which py4j embeds in the message of a streaming query
# that a Python callback ended (a batch that failed on Redis or the replicas' barrier).
_TRACEBACK = "Traceback (most recent call last):"


def fault_text(exc: BaseException) -> str:
    """``Type: message`` of a fault, for an outage's one line: a message that embeds a
    Python traceback (a ``StreamingQueryException`` ended by the batch's callback) gives
    the traceback's last exception line instead, and any other gives its first line; no
    stack frame reaches the log."""
    message = reduced_message(str(exc))
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def reduced_message(message: str) -> str:
    """The exception line of the last traceback ``message`` embeds, or its first line."""
    _, marker, rest = message.rpartition(_TRACEBACK)
    lines = rest.splitlines() if marker else message.splitlines()
    # A traceback's frames are indented; its exception line is the first that is not.
    found = next((line for line in lines if line.strip() and not line[0].isspace()), "")
    return found.strip()
