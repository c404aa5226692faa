"""The client of ``collection-manager server run``'s HTTP API: the supported way for a
program to read collections, their changes, the replicas and the status.

It speaks only HTTP (the import contract in ``pyproject.toml`` keeps it from Redis, Kafka,
Spark and the server's own modules), with the standard library alone, so it works from any
machine that reaches the server, with the server's bounds, token and TLS in force.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Iterable
from types import TracebackType
from typing import TYPE_CHECKING, Any

from collection_manager.client.errors import BrokenAnswer, ClientError
from collection_manager.client.feed import ChangeFeed
from collection_manager.client.models import (
    Collection,
    CollectionDetail,
    CollectionList,
    Replica,
    ReplicaList,
    Status,
    parse,
)
from collection_manager.client.resume import Position, Resume
from collection_manager.client.rows import ARROW, NDJSON, Rows, import_pyarrow, read_arrow
from collection_manager.client.transport import Transport
from collection_manager.client.urls import BaseUrl, collection_path, rows_query, target

if TYPE_CHECKING:
    import pyarrow

DEFAULT_URL = "http://127.0.0.1:8080"  # server run's CM_HTTP_ADDRESS by default
# Seconds a connection and each read may take: above the server's own bound on a read
# (CM_HTTP_REQUEST_TIMEOUT_S, 30 s), so that its 504 arrives rather than a silence.
DEFAULT_TIMEOUT_S = 60.0
# Seconds a change feed may stay silent before it reconnects: four keep-alives missed.
DEFAULT_IDLE_TIMEOUT_S = 60.0


def tls_context(base: BaseUrl, tls: ssl.SSLContext | str | os.PathLike[str] | None) -> Any:
    """The TLS context of ``base``: ``tls`` itself, one trusting the CA file it names, or
    the system's CAs for an ``https`` URL given none; None for ``http``."""
    if not base.tls:
        if tls is not None:
            raise ClientError(f"tls= is given, but {base.origin} is not an https:// URL")
        return None
    if isinstance(tls, ssl.SSLContext):
        return tls
    try:
        return ssl.create_default_context(cafile=None if tls is None else os.fspath(tls))
    except (OSError, ssl.SSLError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ClientError(f"tls={os.fspath(tls) if tls else None}: cannot load it: {why}") from None


class Client:
    """Reads one server. Use it in a ``with`` block, or :meth:`close` it.

    Args:
        url: the server's URL (``http://HOST:PORT``, ``https://HOST:PORT``, with a path
            when a proxy serves the API under one).
        token: the bearer token, when the server has one (``CM_HTTP_TOKEN``).
        tls: for an ``https`` URL: an ``ssl.SSLContext``, or the path of a CA file to
            trust (a self-signed server's certificate); default the system's CAs.
        timeout: seconds a connection, and each read of an answer, may take.

    Raises:
        ClientError: for a URL that is not one, or ``tls`` that cannot be loaded.
    """

    def __init__(
        self,
        url: str = DEFAULT_URL,
        token: str | None = None,
        tls: ssl.SSLContext | str | os.PathLike[str] | None = None,
        timeout: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        base = BaseUrl.parse(url)
        self._transport = Transport(base, token, tls_context(base, tls), timeout)

    def __repr__(self) -> str:
        base = self._transport.base
        return f"Client({base.origin + base.prefix!r})"

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Closes the connection kept for the next request."""
        self._transport.close()

    def _json(self, path: str, query: list[tuple[str, str]] | None = None, **context: Any) -> Any:
        document = self._transport.get_json(
            target(self._transport.base, path, query or ()), **context
        )
        if not isinstance(document, dict):
            raise BrokenAnswer(self._transport.base.shown(path), "not a JSON object")
        return document

    def collections(self) -> list[Collection]:
        """Every collection: name, rows, time, columns, buckets."""
        document = self._json("/collections")
        url = self._transport.base.shown("/collections")
        return list(parse(url, CollectionList, document).collections)

    def collection(self, name: str) -> CollectionDetail:
        """One collection, with its counters, TTLs, row schema and rows per bucket.

        Raises:
            UnknownCollection: when there is none of that name.
        """
        path = collection_path(name)
        document = self._json(path, collection=name)
        return parse(self._transport.base.shown(path), CollectionDetail, document)

    def rows(
        self, name: str, where: str | Iterable[str] | None = None, limit: int | None = None
    ) -> Rows:
        """The rows of ``name`` at one consistent time (its ``as_of``), streamed.

        Args:
            name: the collection.
            where: a term ``COLUMN<op>VALUE`` (op one of ``= != < <= > >= ^=``, as
                ``collections query --where`` takes), or several, all of which must hold.
            limit: at most this many rows, the first the read finds.

        Raises:
            BadRequest: a bad term or limit (``parameter`` names it, ``bound`` the limit).
            UnknownCollection: no such collection.
        """
        path = collection_path(name, "/rows")
        answer = self._transport.get(
            target(self._transport.base, path, rows_query(where, limit)),
            NDJSON,
            timeout=self._transport.timeout,
            collection=name,
        )
        return Rows(answer, lambda: self.collection(name).column_names)

    def rows_arrow(
        self, name: str, where: str | Iterable[str] | None = None, limit: int | None = None
    ) -> pyarrow.Table:
        """The same rows as :meth:`rows`, as a ``pyarrow.Table`` read from Arrow IPC on the
        wire: the columns, then the multiplicity (``count``, or ``(count)`` when a column is
        named ``count``); ``table.schema.metadata[b"as_of"]`` is the time read at.

        Raises:
            MissingDependency: when pyarrow is not installed (``pip install pyarrow``).
            BadRequest, UnknownCollection: as :meth:`rows`.
        """
        import_pyarrow()  # before asking: a missing pyarrow costs no read
        path = collection_path(name, "/rows")
        answer = self._transport.get(
            target(self._transport.base, path, rows_query(where, limit)),
            ARROW,
            timeout=self._transport.timeout,
            collection=name,
        )
        return read_arrow(answer)

    def changes(
        self,
        name: str,
        since: Position | None = None,
        until: Position | None = None,
        retries: int = 5,
        backoff: float = 0.5,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT_S,
    ) -> ChangeFeed:
        """The changes of ``name`` after ``since``, as they come: iterate the feed for
        :class:`Changes`, one per event, each change once across reconnections.

        Args:
            name: the collection.
            since: a position: an answer's ``as_of`` (a time, or of a bucketed collection
                a cut such as ``"12,40,7"``), ``0`` for the start; None: from now.
            until: a position to end at: the feed ends once it reached it. None: never.
            retries: failures in a row it reconnects through before it gives up.
            backoff: seconds it waits after the first failure (at least the stream's
                ``retry``, 1 s from this server); twice that after each next, at most
                30 s, or what the server's ``Retry-After`` asks.
            idle_timeout: seconds without a byte (keep-alives included) after which the
                connection counts as lost.

        Raises (while iterated):
            LogTrimmed: the log no longer holds the changes after the position.
            UnknownCollection: no such collection, or it was dropped while followed.
            ConnectionFailed: the retries were spent; names the position reached.
        """
        resume = Resume(retries=retries, backoff_s=backoff)
        return ChangeFeed(self._transport, name, since, until, resume, idle_timeout)

    def replicas(self, include_removed: bool = False) -> list[Replica]:
        """The replicas: epoch, state, lease and its time left, last heartbeat; with
        ``include_removed``, also the removed ones the retention still keeps."""
        query = [("all", "true")] if include_removed else []
        document = self._json("/replicas", query)
        url = self._transport.base.shown("/replicas")
        return list(parse(url, ReplicaList, document).replicas)

    def status(self, topic: str | None = None) -> Status:
        """What ``status --format json`` shows: the consumer (of ``topic``, default the
        server's ``CM_TOPIC``), the controller, dead letters and collections."""
        query = [] if topic is None else [("topic", topic)]
        document = self._json("/status", query)
        return parse(self._transport.base.shown("/status"), Status, document)
