"""The supported way for a program to read collections: a client of the HTTP API that
``collection-manager server run`` serves (docs/howto/read-from-a-program.md).

The standard library alone for HTTP; pyarrow only for :meth:`Client.rows_arrow`::

    from collection_manager.client import Client

    with Client("http://127.0.0.1:8080") as client:
        rows = client.rows("compute_frontiers", where="worker_id>=0", limit=5)
        print(rows.as_of, [row.values for row in rows])

Modules: ``client.py`` (the :class:`Client`), ``rows.py`` (NDJSON and Arrow reads),
``feed.py`` and ``resume.py`` (the change feed and its reconnection), ``sse.py`` (the event
stream's parser), ``transport.py`` (``http.client``, TLS, the token), ``problems.py`` and
``errors.py`` (refusals as exceptions), ``models.py``, ``urls.py``.
"""

from collection_manager.client.client import Client
from collection_manager.client.errors import (
    BadRequest,
    BrokenAnswer,
    ClientError,
    ConnectionFailed,
    LogTrimmed,
    NotAcceptable,
    NotFound,
    ProblemError,
    ServerError,
    ServerTimeout,
    ServiceUnavailable,
    TooManyRequests,
    TooManyRows,
    Unauthorized,
    UnknownCollection,
)
from collection_manager.client.feed import Change, ChangeFeed, Changes
from collection_manager.client.models import Collection, CollectionDetail, Column, Replica, Status
from collection_manager.client.rows import MissingDependency, Row, Rows

__all__ = [
    "BadRequest",
    "BrokenAnswer",
    "Change",
    "ChangeFeed",
    "Changes",
    "Client",
    "ClientError",
    "Collection",
    "CollectionDetail",
    "Column",
    "ConnectionFailed",
    "LogTrimmed",
    "MissingDependency",
    "NotAcceptable",
    "NotFound",
    "ProblemError",
    "Replica",
    "Row",
    "Rows",
    "ServerError",
    "ServerTimeout",
    "ServiceUnavailable",
    "Status",
    "TooManyRequests",
    "TooManyRows",
    "Unauthorized",
    "UnknownCollection",
]
