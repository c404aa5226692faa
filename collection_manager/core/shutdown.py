"""Shutdown tokens: a cancellable flag per subscribe, checked at every element (seed 001).

Materialize shuts a dataflow down by dropping the tokens its sources hold; a source that
observes the drop stops emitting at once, even in the middle of a large snapshot, instead
of finishing the batch it is in. A :class:`ShutdownToken` is that token for one
introspection subscribe of a replica agent: the agent cancels it, and the emitting loop
(wrapped in :func:`guard`) stops before the next element. An agent token cancels all its
subscribe tokens (:meth:`ShutdownToken.child`).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Iterable, Iterator
from typing import TypeVar

from collection_manager.core.errors import CollectionManagerError

logger = logging.getLogger(__name__)

T = TypeVar("T")


class Cancelled(CollectionManagerError):
    """Emission observed a cancelled token (or a purged producer) and stopped.

    Attributes:
        reason: why the token was cancelled.
        token: name of the token that was cancelled.
    """

    def __init__(self, reason: str, *, token: str = "", collection: str | None = None) -> None:
        super().__init__(f"{token or 'emission'} cancelled: {reason}", collection=collection)
        self.reason = reason
        self.token = token


class ShutdownToken:
    """A thread-safe, one-way cancellation flag, optionally the child of another token.

    Cancelling is idempotent: the first reason wins. Cancelling a token cancels its children;
    cancelling a child leaves its parent alone.

    Args:
        name: names the token in logs and in :class:`Cancelled`, e.g. ``subscribe:frontiers``.
    """

    def __init__(self, name: str = "") -> None:
        self.name = name
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._reason: str | None = None
        # Weak: a finished subscribe's token must not be kept alive by the agent's token.
        self._children: weakref.WeakSet[ShutdownToken] = weakref.WeakSet()
        # Strong upwards: a live leaf keeps its chain to the root, so the root reaches it.
        self._parent: ShutdownToken | None = None

    def __repr__(self) -> str:
        state = f"cancelled: {self._reason}" if self.cancelled else "live"
        return f"ShutdownToken({self.name!r}, {state})"

    @property
    def cancelled(self) -> bool:
        """Whether the token was cancelled (cheap: safe to check for every element)."""
        return self._event.is_set()

    @property
    def reason(self) -> str | None:
        """The reason given to the first :meth:`cancel`, or None while live."""
        return self._reason

    def cancel(self, reason: str = "cancelled") -> bool:
        """Cancels the token and all its children.

        Args:
            reason: why; kept for logs and for the :class:`Cancelled` raised later.

        Returns:
            True when this call cancelled the token, False when it already was.
        """
        with self._lock:
            if self._reason is not None:
                return False
            self._reason = reason
            self._event.set()
            children = list(self._children)
        logger.info("token %s cancelled: %s", self.name, reason)
        for child in children:
            child.cancel(f"{self.name or 'parent'} cancelled: {reason}")
        return True

    def child(self, name: str = "") -> ShutdownToken:
        """A new token that is cancelled when this one is (at once, if it already is)."""
        token = ShutdownToken(name)
        token._parent = self
        with self._lock:
            reason = self._reason
            if reason is None:
                self._children.add(token)
        if reason is not None:
            token.cancel(f"{self.name or 'parent'} cancelled: {reason}")
        return token

    def raise_if_cancelled(self) -> None:
        """Raises :class:`Cancelled` when the token was cancelled.

        Raises:
            Cancelled: with the token's reason.
        """
        if self._event.is_set():
            raise Cancelled(self._reason or "cancelled", token=self.name)

    def wait(self, timeout: float | None = None) -> bool:
        """Blocks until the token is cancelled or ``timeout`` seconds passed.

        Returns:
            Whether the token is cancelled.
        """
        return self._event.wait(timeout)


def guard(source: Iterable[T], token: ShutdownToken) -> Iterator[T]:
    """Yields ``source``'s elements, checking ``token`` before each one (the fuse).

    The check is made after an element was pulled and before it is handed on, so an
    element produced after the cancel never leaves, however slow the source is. The
    source is closed when emission stops, so a generator's ``finally`` runs at once.

    Raises:
        Cancelled: when the token is cancelled; a partial emission never looks complete.
    """
    iterator = iter(source)
    try:
        token.raise_if_cancelled()
        for element in iterator:
            token.raise_if_cancelled()
            yield element
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()
