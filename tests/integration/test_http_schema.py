"""A property-based pass over ``serve``'s OpenAPI document (schemathesis): for every
operation, generated parameters (valid ones and, as schemathesis makes them, invalid ones)
against a real Redis; no answer may be a server error, and every answer must have a status
code, a media type and (for JSON) a body that the document declares for it.

Half the generated requests name a collection that exists (one plain, one of four buckets),
so that ``where``, ``limit`` and ``since`` reach the reads, not only the 404 of a name.
A change stream never ends by itself: its head is checked, then it is closed. The token is
sent with every request (its absence is test_http_api.py's).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
import redis as redis_lib
import requests
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from collection_manager import devservices
from collection_manager.core.requests import Append
from collection_manager.core.routing import route_append
from collection_manager.core.specs import CollectionSpec
from collection_manager.http import metrics
from collection_manager.http.openapi import document
from collection_manager.storage.store import RedisStore
from tests.integration.http_service import served
from tests.support import assert_eventually

SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "ratio", "type": ["null", "double"]},
        {"name": "up", "type": "boolean"},
    ],
}
TOKEN = "schema-test-token"
# Generated requests per operation: enough to reach every parameter's kinds of values.
EXAMPLES = 40

# The document as the server serves it with a token (a pure function of that), loaded when
# the module is: schemathesis's from_fixture reads an attribute pytest 9 no longer has.
schema = schemathesis.openapi.from_dict(document(token=True))
# One test per operation, each with its own id: schemathesis's own parametrize gives its
# items one node id, and pytest-xdist then ran only the first operation of the seven.
OPERATIONS = [result.ok() for result in schema.get_all_operations()]
# Valid and invalid requests alike; deterministic, so that a failure is one to look at.
CASES = {
    operation.label: st.one_of(
        operation.as_strategy(GenerationMode.POSITIVE),
        operation.as_strategy(GenerationMode.NEGATIVE),
    )
    for operation in OPERATIONS
}


@pytest.fixture(scope="module")
def served_api(
    endpoints: devservices.Endpoints, redis: redis_lib.Redis
) -> Iterator[tuple[str, list[str]]]:
    """A ``serve`` with a token, and the names of the two collections it holds."""
    store = RedisStore(redis)
    tag = uuid.uuid4().hex[:8]
    plain = CollectionSpec(f"schema-{tag}", SCHEMA, ("replica_id", "worker_id"))
    bucketed = CollectionSpec(f"schema-b-{tag}", SCHEMA, ("replica_id",), buckets=4)
    rows = [((f"r{n}", n % 3, n / 7 if n % 2 else None, n % 2 == 0), 1) for n in range(20)]
    for offset, spec in enumerate((plain, bucketed)):
        store.create_collection(spec)
        parts = route_append(Append(spec.name, "writer", 1, tuple(rows), 0), spec)
        store.apply_requests(f"schema-{tag}", 0, [(offset, part) for part in parts])
    try:
        # Keep-alives often: a stream the test closed ends at the server's next writes, so
        # that streams never pile up to their bound (a 503 is a server error here).
        settings = {"http_token": TOKEN, "http_keepalive_s": 0.2}
        with served(endpoints.redis_url, endpoints.kafka_bootstrap, **settings) as service:
            yield service.url, [plain.name, bucketed.name]
    finally:
        for spec in (plain, bucketed):
            store.drop_collection(spec.name)


@pytest.mark.parametrize("label", list(CASES))
def test_no_answer_is_a_server_error_and_each_fits_the_document(
    label: str, served_api: tuple[str, list[str]], reads_before: dict[str, float]
) -> None:
    @settings(
        max_examples=EXAMPLES,
        derandomize=True,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    @given(case=CASES[label])
    def check(case: Any) -> None:
        _check(case, served_api)

    check()


def _check(case: Any, served_api: tuple[str, list[str]]) -> None:
    url, names = served_api
    auth = {"Authorization": f"Bearer {TOKEN}"}
    parameters = case.path_parameters or {}
    name = parameters.get("name")
    if isinstance(name, str) and len(name) % 2 == 0:
        parameters["name"] = names[len(name) % 4 // 2]
    if case.path.endswith("/changes"):
        request = case.as_transport_kwargs(base_url=url, headers=auth)
        answer = requests.request(**request, stream=True, timeout=30)
        try:
            assert answer.status_code < 500, answer.text
            if answer.status_code == 200:
                assert answer.headers["Content-Type"] == "text/event-stream"
            else:
                assert answer.headers["Content-Type"] == "application/problem+json"
        finally:
            answer.close()
        return
    case.call_and_validate(
        base_url=url,
        headers=auth,
        checks=[
            not_a_server_error,
            status_code_conformance,
            content_type_conformance,
            response_schema_conformance,
        ],
        timeout=60,
    )


def test_the_pass_reached_the_reads_of_both_collections(
    served_api: tuple[str, list[str]], reads_before: dict[str, float]
) -> None:
    """The generated requests were not all refused at the door: rows were read (200) and
    bad parameters refused (400), on the routes that read."""
    assert reads_before  # taken when the module's server started

    def reached() -> None:
        for route, code in [(ROWS, "200"), (ROWS, "400"), (CHANGES, "200"), (CHANGES, "400")]:
            assert answered(route, code) > reads_before[route + code], (route, code)

    # A stream is counted when it ends, at the server's next write after the test closed it.
    assert_eventually(reached, timeout=10)


ROWS = "/api/v1/collections/{name}/rows"
CHANGES = "/api/v1/collections/{name}/changes"


def answered(route: str, code: str) -> float:
    labels = {"route": route, "method": "GET", "code": code}
    return metrics.REGISTRY.get_sample_value("cm_http_requests_total", labels) or 0.0


@pytest.fixture(scope="module")
def reads_before() -> dict[str, float]:
    pairs = [(route, code) for route in (ROWS, CHANGES) for code in ("200", "400")]
    return {route + code: answered(route, code) for route, code in pairs}
