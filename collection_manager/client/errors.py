"""What the client raises: one root, :class:`ClientError`, and a small tree under it.

Two kinds of failure, kept apart because a program handles them differently:

- the server answered with a refusal (RFC 9457 ``application/problem+json``): a
  :class:`ProblemError`, one subclass per family of problem kinds (``problems.py`` maps
  them), carrying what the document names: its ``type``, ``title``, ``detail``, the
  ``parameter`` at fault and the ``bound`` it broke, and ``Retry-After``;
- no answer came, or it broke off: :class:`ConnectionFailed` (the URL and why, never a
  traceback of ``http.client`` or ``ssl``), :class:`BrokenAnswer` (an answer cut short or
  not of the API's shape).

Every one derives from ``CollectionManagerError``, so the command line prints it as one
``error:`` line as it does the project's other errors.
"""

from __future__ import annotations

from collection_manager.core.errors import CollectionManagerError


class ClientError(CollectionManagerError):
    """Root of everything the client raises (also a wrong argument, such as a bad URL)."""


class ConnectionFailed(ClientError):
    """No answer: the server could not be reached, the TLS handshake failed, or the
    connection dropped or went silent past the timeout.

    Attributes:
        url: the URL asked for (its query left out: it may hold a filter's values).
        reason: why, in a few words (``Connection refused``, ``certificate verify failed``).
    """

    def __init__(self, url: str, reason: str, *, collection: str | None = None) -> None:
        super().__init__(f"cannot read {url}: {reason}", collection=collection)
        self.url, self.reason = url, reason


class BrokenAnswer(ClientError):
    """An answer that began but broke off (the server ends a streamed answer without its
    last chunk when a read fails after its first step), or is not what the API sends."""

    def __init__(self, url: str, reason: str, *, collection: str | None = None) -> None:
        super().__init__(f"the answer of {url} is broken: {reason}", collection=collection)
        self.url, self.reason = url, reason


class ProblemError(ClientError):
    """The server refused: its problem document, as attributes.

    Attributes:
        status: the HTTP status (400 to 599).
        type: the problem's type URI (``urn:collection-manager:problem:KIND``), stable:
            switch on it, or on :attr:`kind`, never on the wording of :attr:`detail`.
        kind: the last part of ``type`` (``bad-parameter``); None for an answer that is not
            a problem document (a proxy's error page).
        title: the same for every problem of a kind.
        detail: what was wrong in this request, and what would be valid.
        parameter: the parameter at fault (``where``, ``limit``, ``Authorization``), if named.
        bound: the limit broken, if named.
        instance: the path that was asked for.
        url: the URL asked for (without its query).
        retry_after: seconds the server asks to wait before trying again (``Retry-After``).
    """

    def __init__(
        self,
        *,
        status: int,
        type: str | None,
        title: str,
        detail: str,
        url: str,
        parameter: str | None = None,
        bound: int | float | None = None,
        instance: str | None = None,
        retry_after: float | None = None,
        collection: str | None = None,
    ) -> None:
        super().__init__(f"{status} {title}: {detail}", collection=collection)
        self.status, self.type, self.title, self.detail = status, type, title, detail
        self.url, self.parameter, self.bound = url, parameter, bound
        self.instance, self.retry_after = instance, retry_after

    @property
    def kind(self) -> str | None:
        if self.type is None or ":" not in self.type:
            return None
        return self.type.rsplit(":", 1)[1]


class BadRequest(ProblemError):
    """400: a parameter is not valid (``parameter`` names it, ``bound`` the limit)."""


class Unauthorized(ProblemError):
    """401: the server wants a bearer token, and none or another was sent."""


class NotFound(ProblemError):
    """404: no such endpoint, or (:class:`UnknownCollection`) no such collection."""


class UnknownCollection(NotFound):
    """404 ``unknown-collection``: no collection of that name (the detail lists those
    there are), or one dropped while its changes were followed."""


class NotAcceptable(ProblemError):
    """405 or 406: a method or a format this endpoint does not answer; a client bug."""


class LogTrimmed(ProblemError):
    """410: the change log no longer holds the changes after the position asked for; read
    the rows again and follow the changes from their ``as_of``."""


class TooManyRows(ProblemError):
    """422: more rows than a JSON answer holds (the client streams rows, so only a
    server with a bound below ``limit`` answers this)."""


class ServiceUnavailable(ProblemError):
    """503: the store cannot answer now (Redis away, a failover); ``retry_after`` says
    when to try again."""


class TooManyRequests(ServiceUnavailable):
    """503 ``too-many-requests`` or ``too-many-streams``: every slot of the server's bound
    (``bound``) is taken; try again after ``retry_after`` seconds."""


class ServerTimeout(ProblemError):
    """504: the read took longer than the server's ``CM_HTTP_REQUEST_TIMEOUT_S``
    (``bound``); narrow it with ``where`` or ``limit``, or try again."""


class ServerError(ProblemError):
    """500 (or another 5xx): the server failed; its log has the line."""
