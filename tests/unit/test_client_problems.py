"""Refusals as the client's exceptions (collection_manager/client/problems.py), without
services: every problem kind the server has maps to a class, what the document names
(parameter, bound, Retry-After) is kept, and an answer that is no problem document still
becomes one clear exception."""

from __future__ import annotations

import http.client
import json
import socket
import ssl

import pytest

from collection_manager.client import errors
from collection_manager.client.problems import (
    KIND_CLASSES,
    class_of,
    from_answer,
    from_document,
    retry_after,
)
from collection_manager.client.transport import reason_of
from collection_manager.core.errors import CollectionManagerError
from collection_manager.http.problems import KINDS, MEDIA_TYPE, Problem

URL = "http://127.0.0.1:8080/api/v1/collections/c/rows"


def test_every_kind_the_server_has_maps_to_a_class_of_its_status() -> None:
    assert set(KIND_CLASSES) == set(KINDS)
    for kind, (status, _) in KINDS.items():
        found = class_of(kind, status)
        assert issubclass(found, errors.ProblemError)
        # The class says the status family: 503s are ServiceUnavailable, 5xx server-side.
        if status == 503:
            assert issubclass(found, errors.ServiceUnavailable)
        assert issubclass(found, errors.ServerError) == (status in (500,))


@pytest.mark.parametrize(
    ("problem", "cls"),
    [
        (Problem("bad-parameter", "at most 32 where terms", "where", 32), errors.BadRequest),
        (Problem("unauthorized", "needs a token", "Authorization"), errors.Unauthorized),
        (Problem("unknown-collection", "unknown collection 'x'", "name"), errors.UnknownCollection),
        (Problem("not-found", "no endpoint"), errors.NotFound),
        (Problem("log-trimmed", "trimmed", "since"), errors.LogTrimmed),
        (Problem("too-many-rows", "more than 3", "limit", 3), errors.TooManyRows),
        (Problem("too-many-streams", "32 running", bound=32), errors.TooManyRequests),
        (Problem("timeout", "took longer", bound=0.5), errors.ServerTimeout),
        (Problem("internal", "failed"), errors.ServerError),
    ],
)
def test_the_servers_documents_become_typed_errors_naming_parameter_and_bound(
    problem: Problem, cls: type[errors.ProblemError]
) -> None:
    answer = from_answer(
        problem.status,
        "Reason",
        f"{MEDIA_TYPE}; charset=utf-8",
        problem.body("/api/v1/collections/c/rows"),
        URL,
        {"retry-after": "2"},
        collection="c",
    )
    assert type(answer) is cls
    assert isinstance(answer, CollectionManagerError)  # printed as one error: line
    assert (answer.status, answer.kind, answer.type) == (problem.status, problem.kind, problem.type)
    assert (answer.parameter, answer.bound, answer.detail) == (
        problem.parameter,
        problem.bound,
        problem.detail,
    )
    assert (answer.instance, answer.url, answer.retry_after) == (
        "/api/v1/collections/c/rows",
        URL,
        2.0,
    )
    assert str(answer) == f"{problem.status} {answer.title}: {problem.detail} [collection=c]"


def test_an_unknown_kind_falls_back_on_its_status() -> None:
    document = {"type": "urn:collection-manager:problem:new-kind", "title": "T", "detail": "d"}
    assert type(from_document(document, 400, URL)) is errors.BadRequest
    assert type(from_document(document, 418, URL)) is errors.ProblemError
    assert type(from_document(document, 502, URL)) is errors.ServerError
    # The document's own status wins: an error event of a change stream carries it.
    assert type(from_document({**document, "status": 410}, 500, URL)) is errors.LogTrimmed


def test_fields_of_the_wrong_type_are_left_out() -> None:
    document = {"type": 3, "title": ["x"], "detail": None, "parameter": 1, "bound": True}
    found = from_document(document, 400, URL)
    assert (found.type, found.kind, found.parameter, found.bound) == (None, None, None, None)
    assert (found.title, found.detail) == ("HTTP 400", "the server gave no detail")


def test_an_answer_that_is_no_problem_document_says_what_it_was() -> None:
    page = b"<html><body>502 Bad Gateway</body></html>" + b" " * 1000
    found = from_answer(502, "Bad Gateway", "text/html", page, URL)
    assert type(found) is errors.ServerError
    assert found.title == "Bad Gateway" and found.kind is None
    assert "text/html" in found.detail and "502 Bad Gateway" in found.detail
    assert len(found.detail) < 300
    empty = from_answer(503, "Service Unavailable", None, b"", URL, {"Retry-After": "5"})
    assert type(empty) is errors.ServiceUnavailable and empty.retry_after == 5.0
    # Plain JSON holding a problem (a proxy that rewrites the media type) is still one.
    document = Problem("bad-parameter", "bad", "limit").document()
    relabeled = from_answer(400, "", "application/json", json.dumps(document).encode(), URL)
    assert relabeled.parameter == "limit"


@pytest.mark.parametrize(
    ("header", "seconds"),
    [("1", 1.0), (" 2.5 ", 2.5), (None, None), ("Wed, 21 Oct 2026 07:28:00 GMT", None)],
)
def test_retry_after_in_seconds(header: str | None, seconds: float | None) -> None:
    assert retry_after(header) == seconds
    assert retry_after("-1") is None and retry_after("inf") is None


@pytest.mark.parametrize(
    ("failure", "words"),
    [
        (ConnectionRefusedError(111, "Connection refused"), "Connection refused"),
        (TimeoutError(), "no answer within 5 s"),
        (socket.gaierror(-2, "Name or service not known"), "cannot resolve the host"),
        (http.client.RemoteDisconnected("x"), "closed the connection without an answer"),
        (http.client.IncompleteRead(b"", 10), "the answer was cut short"),
        (ssl.SSLCertVerificationError(1, "x"), "TLS: certificate verify failed"),
    ],
)
def test_a_connection_failure_is_said_in_words_without_internals(
    failure: BaseException, words: str
) -> None:
    said = reason_of(failure, 5.0)
    assert words in said and "Traceback" not in said and "http.client" not in said
