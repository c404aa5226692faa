"""The HTTP API's pure parts, without services: content negotiation, problem documents,
parameters, the token and where ``serve`` may listen, settings, bounds, encodings, routes,
and the answers the API gives before it reads anything."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from collection_manager.config import HttpConfig
from collection_manager.config.errors import ConfigError
from collection_manager.core.cut import Cut
from collection_manager.core.errors import (
    FilterError,
    InfrastructureError,
    LogTrimmedError,
    UnknownCollectionError,
)
from collection_manager.core.specs import Row
from collection_manager.http import openapi
from collection_manager.http.api import ROUTES, Api, route_of
from collection_manager.http.context import Sources
from collection_manager.http.encode import arrow_answer, count_field, json_answer, ndjson_answer
from collection_manager.http.exchange import Request
from collection_manager.http.failures import problem_of, redact
from collection_manager.http.limits import Deadline, Slots
from collection_manager.http.negotiation import ARROW, JSON, NDJSON, choose, parse_accept
from collection_manager.http.params import (
    MAX_FIELDS,
    MAX_WHERE_TERMS,
    Query,
    parse_flag,
    parse_limit,
    parse_position,
    parse_where_terms,
)
from collection_manager.http.problems import KINDS, Problem
from collection_manager.http.security import (
    Cors,
    authorize,
    check_exposure,
    is_loopback,
    same_secret,
    tls_context,
)
from collection_manager.http.service import check_settings
from collection_manager.observability.health import Health
from collection_manager.storage.reads import Snapshot
from schemas.introspection import introspection_spec

FRONTIERS = introspection_spec("compute_frontiers")
ERRORS = introspection_spec("error_counts")  # has a column named count
BUCKETED = FRONTIERS.__class__(FRONTIERS.name, FRONTIERS.row_schema, buckets=3)
OFFERED = (JSON, NDJSON, ARROW)


# Content negotiation


@pytest.mark.parametrize(
    ("accept", "chosen"),
    [
        (None, JSON),
        ("", JSON),
        ("*/*", JSON),
        ("application/*", JSON),
        (NDJSON, NDJSON),
        (f"{ARROW}, {JSON};q=0.9", ARROW),
        (f"{JSON};q=0.1, {NDJSON};q=0.2", NDJSON),
        (f"*/*;q=0.1, {ARROW}", ARROW),
        (f"application/*;q=0.5, {JSON};q=0", NDJSON),  # the specific range wins for JSON
        ("text/html, */*;q=0.01", JSON),
        ("garbage, application/json", JSON),  # an unparsable range is skipped
        (f"{NDJSON};q=2, {JSON};q=0.5", JSON),  # a weight above 1 is no weight
    ],
)
def test_the_heaviest_acceptable_type_wins_json_among_equals(
    accept: str | None, chosen: str
) -> None:
    assert choose(accept, OFFERED) == chosen


@pytest.mark.parametrize("accept", ["text/html", f"{JSON};q=0, text/*", "*/*;q=0", "nonsense"])
def test_nothing_acceptable_is_406_naming_what_is_offered(accept: str) -> None:
    with pytest.raises(Problem) as refused:
        choose(accept, OFFERED)
    assert refused.value.status == 406 and refused.value.parameter == "Accept"
    assert all(media in refused.value.detail for media in OFFERED)


@given(st.text(max_size=200))
def test_any_accept_header_chooses_or_refuses_never_fails(header: str) -> None:
    parse_accept(header)
    try:
        assert choose(header, OFFERED) in OFFERED
    except Problem as refused:
        assert refused.status == 406


# Problems


def test_a_problem_document_has_rfc_9457s_members_and_the_bound() -> None:
    problem = Problem("too-many-rows", "more than 3 rows", parameter="limit", bound=3)
    assert json.loads(problem.body("/api/v1/x")) == {
        "type": "urn:collection-manager:problem:too-many-rows",
        "title": KINDS["too-many-rows"][1],
        "status": 422,
        "detail": "more than 3 rows",
        "instance": "/api/v1/x",
        "parameter": "limit",
        "bound": 3,
    }
    assert set(Problem("internal", "x").document()) == {"type", "title", "status", "detail"}
    with pytest.raises(ValueError):
        Problem("no-such-kind", "x")


def test_failures_become_problems_without_a_trace_or_a_password(
    caplog: pytest.LogCaptureFixture,
) -> None:
    assert problem_of(UnknownCollectionError("unknown collection 'x'")).status == 404
    assert problem_of(FilterError("where 'x': bad")).parameter == "where"
    down = problem_of(InfrastructureError("Redis at redis://u:pw@h:1/0 does not answer"))
    assert down.status == 503 and "pw" not in down.detail and "***" in down.detail
    gone = problem_of(LogTrimmedError("the change log of c was trimmed through time 7"))
    assert (gone.status, gone.kind, gone.detail) == (
        410,
        "log-trimmed",
        "the change log of c was trimmed through time 7",
    )
    bug = problem_of(KeyError("secret redis://u:pw@h:1/0"))
    assert bug.status == 500 and "KeyError" in bug.detail and "pw" not in bug.detail
    assert "Traceback" not in caplog.text and "pw@" not in caplog.text
    assert redact("see rediss://user:pw@host:6380/0?x=1 now") == (
        "see rediss://user:***@host:6380/0?x=1 now"
    )


# Parameters


def test_a_query_takes_the_parameters_of_its_endpoint_once_each() -> None:
    query = Query("where=a%3D1&where=b>=2&limit=5", single=("limit",), repeated=("where",))
    assert (query.all("where"), query.one("limit"), query.one("x")) == (["a=1", "b>=2"], "5", None)
    assert Query("where=replica_id=r1", repeated=("where",)).all("where") == ["replica_id=r1"]
    for raw, says in [
        ("colour=red", "unknown parameter 'colour'"),
        ("limit=1&limit=2", "given 2 times"),
        ("where=%ff", "not UTF-8"),
        ("&".join(f"where=a{n}" for n in range(MAX_FIELDS + 1)), f"at most {MAX_FIELDS}"),
    ]:
        with pytest.raises(Problem) as refused:
            Query(raw, single=("limit",), repeated=("where",))
        assert refused.value.status == 400 and says in refused.value.detail


def test_limits_flags_and_where_terms_are_checked_naming_the_bound() -> None:
    assert (parse_limit(None), parse_limit("7"), parse_limit("7", 7)) == (None, 7, 7)
    for text in ("0", "-1", "x", "1.5", " 3", "٣"):
        with pytest.raises(Problem, match="limit must be an integer from 1"):
            parse_limit(text)
    with pytest.raises(Problem) as over:
        parse_limit("8", 7)
    assert over.value.bound == 7
    assert (parse_flag("all", None), parse_flag("all", "TRUE"), parse_flag("all", "0")) == (
        False,
        True,
        False,
    )
    with pytest.raises(Problem, match="all is true or false"):
        parse_flag("all", "yes please")
    with pytest.raises(Problem) as many:
        parse_where_terms(["a=1"] * (MAX_WHERE_TERMS + 1))
    assert many.value.bound == MAX_WHERE_TERMS


def test_a_position_is_a_time_or_a_cut_of_the_collections_buckets() -> None:
    assert parse_position("12", FRONTIERS, "since") == 12
    assert parse_position("0", BUCKETED, "since") == Cut((0, 0, 0))
    assert parse_position("3,4,5", BUCKETED, "Last-Event-ID") == Cut((3, 4, 5))
    for text, spec in [
        ("1,2", FRONTIERS),
        ("-1", FRONTIERS),
        ("²", FRONTIERS),
        (str(2**53), FRONTIERS),
        ("3,4", BUCKETED),
        ("3,4,x", BUCKETED),
        ("3,,4", BUCKETED),
        ("7", BUCKETED),
    ]:
        with pytest.raises(Problem) as refused:
            parse_position(text, spec, "since")
        assert refused.value.parameter == "since", text


@given(st.text(max_size=40))
def test_any_position_parses_or_is_a_400(text: str) -> None:
    for spec in (FRONTIERS, BUCKETED):
        try:
            parse_position(text, spec, "since")
        except Problem as refused:
            assert refused.status == 400


# Security


def test_loopback_needs_no_token_and_a_wider_address_does() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("") and not is_loopback("::")
    check_exposure("127.0.0.1", "127.0.0.1:8080", None, tls=False)
    with pytest.raises(ConfigError) as refused:
        check_exposure("0.0.0.0", "0.0.0.0:8080", None, tls=False)
    assert "CM_HTTP_TOKEN" in str(refused.value) and "\n" not in str(refused.value)
    check_exposure("0.0.0.0", "0.0.0.0:8080", "t", tls=True)


def test_the_token_is_compared_whole_and_never_repeated() -> None:
    authorize(None, None)  # no token set: everyone
    authorize("Bearer tok", "tok")
    authorize("bearer   tok ", "tok")
    for header in (None, "Bearer", "Bearer to", "Bearer tokk", "Basic tok", "tok"):
        with pytest.raises(Problem) as refused:
            authorize(header, "tok")
        assert refused.value.status == 401 and "tok" not in refused.value.detail.replace(
            "token", ""
        )
        assert refused.value.headers["WWW-Authenticate"].startswith("Bearer realm=")
    assert same_secret("a", "a") and not same_secret("a", "ab")


def test_tls_needs_both_files_that_load(tmp_path: Path) -> None:
    assert tls_context(None, None) is None
    with pytest.raises(ConfigError, match="CM_HTTP_TLS_KEY_FILE is not"):
        tls_context(tmp_path / "c.pem", None)
    with pytest.raises(ConfigError, match="cannot load them"):
        tls_context(tmp_path / "c.pem", tmp_path / "k.pem")


def test_cors_allows_the_origins_named_and_no_other() -> None:
    assert not Cors.of("").enabled and Cors.of("").allow("https://a.example") is None
    some = Cors.of("https://a.example/, https://b.example")
    assert some.allow("https://a.example") == "https://a.example"
    assert some.allow("https://c.example") is None and some.allow(None) is None
    assert Cors.of("*").allow("https://any.example") == "*"


def test_settings_it_cannot_run_with_are_refused_naming_them() -> None:
    check_settings(HttpConfig())
    for field, value, name in [
        ("http_max_rows", 0, "CM_HTTP_MAX_ROWS=0"),
        ("http_max_streams", -1, "CM_HTTP_MAX_STREAMS=-1"),
        ("http_request_timeout_s", 0.0, "CM_HTTP_REQUEST_TIMEOUT_S=0.0"),
        ("http_keepalive_s", float("nan"), "CM_HTTP_KEEPALIVE_S=nan"),
    ]:
        with pytest.raises(ConfigError, match=name):
            check_settings(HttpConfig(**{field: value}))
    assert "sekrit" not in repr(HttpConfig(http_token="sekrit"))


# Bounds


def test_slots_refuse_past_their_bound_and_come_back_when_every_holder_let_go() -> None:
    slots = Slots(1, "too-many-requests", "CM_HTTP_MAX_REQUESTS")
    ticket = slots.take()
    with pytest.raises(Problem) as refused:
        slots.take()
    assert refused.value.status == 503 and refused.value.bound == 1
    assert "CM_HTTP_MAX_REQUESTS=1" in refused.value.detail
    ticket.hold()  # a read still running
    ticket.release()  # the request is done
    assert slots.taken == 1
    ticket.release()  # the read is done
    assert slots.taken == 0
    slots.take()


def test_a_deadline_answers_504_and_the_read_keeps_its_slot_until_it_ends() -> None:
    slots = Slots(1, "too-many-requests", "CM_HTTP_MAX_REQUESTS")
    ticket = slots.take()
    go = threading.Event()
    deadline = Deadline(0.05, "CM_HTTP_REQUEST_TIMEOUT_S", ticket)
    with pytest.raises(Problem) as late:
        deadline.run(lambda: go.wait(30))
    assert late.value.status == 504 and late.value.bound == 0.05
    ticket.release()
    assert slots.taken == 1  # the read goes on
    go.set()
    for _ in range(1000):
        if slots.taken == 0:
            break
        threading.Event().wait(0.01)
    assert slots.taken == 0
    assert Deadline(10, "S").run(lambda: 42) == 42
    with pytest.raises(KeyError):
        Deadline(10, "S").run(lambda: {}["x"])


# Encodings


def test_the_three_encodings_hold_the_same_rows() -> None:
    rows: dict[Row, int] = {("r1", "u1", 0, 41): 1, ("r1", "u1", 1, None): 2, ("r2", "ü", 0, 7): -1}
    snapshot = Snapshot(rows, 42)
    document = json.loads(json_answer(FRONTIERS, snapshot))
    assert document["as_of"] == 42 and len(document["rows"]) == 3
    steps = [dict(list(rows.items())[:2]), {}, dict(list(rows.items())[2:])]
    lines = [
        json.loads(line) for line in b"".join(ndjson_answer(FRONTIERS, 42, steps)).splitlines()
    ]
    assert lines[0] == {"collection": "compute_frontiers", "as_of": 42}
    arrow = pa.ipc.open_stream(io.BytesIO(b"".join(arrow_answer(FRONTIERS, 42, steps))))
    assert [batch.num_rows for batch in arrow] == [2, 1]  # a record batch per step with rows
    table = pa.ipc.open_stream(io.BytesIO(b"".join(arrow_answer(FRONTIERS, 42, steps)))).read_all()
    assert table.schema.metadata == {b"collection": b"compute_frontiers", b"as_of": b"42"}
    as_arrow = sorted(json.dumps(r, sort_keys=True) for r in table.to_pylist())
    as_lines = sorted(
        json.dumps({**e["row"], "count": e["count"]}, sort_keys=True) for e in lines[1:]
    )
    as_json = sorted(
        json.dumps({**e["row"], "count": e["count"]}, sort_keys=True) for e in document["rows"]
    )
    assert as_arrow == as_lines == as_json
    cut = Snapshot(rows, 12, Cut((5, 7)))
    assert json.loads(next(iter(ndjson_answer(FRONTIERS, cut.as_of_text, []))))["as_of"] == "5,7"
    assert count_field(ERRORS) == "(count)" and count_field(FRONTIERS) == "count"


def test_an_empty_snapshot_is_a_schema_and_no_rows() -> None:
    table = pa.ipc.open_stream(io.BytesIO(b"".join(arrow_answer(ERRORS, 0, [])))).read_all()
    assert table.num_rows == 0 and table.schema.names == [*ERRORS.column_names, "(count)"]


def _counting(asked: list[int]) -> Iterator[dict[Row, int]]:
    for n in range(5):
        asked.append(n)
        yield {(f"r{n}", "u", n, None): 1}


def test_each_step_is_read_only_once_the_part_before_was_taken() -> None:
    """The encoders hold one step: a step is asked for only when the part made of the one
    before was taken (a counting source), so the rows in memory are a step's at most."""
    for encode in (ndjson_answer, arrow_answer):
        asked: list[int] = []
        parts = encode(FRONTIERS, 1, _counting(asked))
        next(parts)  # the header (NDJSON) or the schema (Arrow): no step read yet
        assert asked == []
        for taken in range(1, 6):
            next(parts)
            assert len(asked) == taken
        list(parts)  # the rest: Arrow's end marker
        assert len(asked) == 5


# Routes and the answers given before any read


def test_paths_find_their_routes_and_arguments() -> None:
    route, arguments = route_of("/api/v1/collections/a.b-c/rows")
    assert route is not None and route.template.endswith("/rows") and arguments == {"name": "a.b-c"}
    assert route_of("/api/v1/collections/x/changes")[0] is not None
    assert route_of("/api/v1/collections/x/changes")[0].stream  # type: ignore[union-attr]
    assert route_of("/api/v1/collections/%ff/rows") == (None, {})
    assert route_of("/api/v1/collections//rows") == (None, {})
    assert route_of("/api/v1/collections/x/rows/") == (None, {})
    documented = set(openapi.document(token=False)["paths"])
    assert documented == {route.template for route in ROUTES}


class _NoRedis:
    """A client the answers below must never use."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"Redis was asked ({name})")


def _api(**settings: Any) -> Api:
    sources = Sources(_NoRedis(), "redis://127.0.0.1:1/0", None, "t", "n")  # type: ignore[arg-type]
    return Api(sources, HttpConfig(**settings), Health())


def test_refusals_before_any_read_are_problems() -> None:
    api = _api(http_token="tok")
    post = api.answer(Request("POST", "/api/v1/collections"))
    assert (post.status, post.headers["Allow"]) == (405, "GET, HEAD")
    assert api.answer(Request("GET", "/api/v1/collections")).status == 401
    wrong = api.answer(Request("GET", "/api/v1/nothing", headers={"authorization": "Bearer tok"}))
    assert (wrong.status, wrong.route) == (404, "other")
    assert json.loads(wrong.body)["type"].endswith(":not-found")  # type: ignore[arg-type]
    document = api.answer(
        Request("GET", "/api/v1/openapi.json", headers={"Authorization": "Bearer tok"})
    )
    assert document.status == 200 and json.loads(document.body)["openapi"] == "3.1.0"  # type: ignore[arg-type]
    health = api.answer(Request("GET", "/healthz"))
    assert (health.status, health.body) == (200, b"ok\n")  # no token asked
    assert api.answer(Request("DELETE", "/metrics")).status == 405


def test_the_openapi_document_describes_every_problem_and_the_token_when_set() -> None:
    with_token, without = openapi.document(token=True), openapi.document(token=False)
    assert with_token["security"] == [{"bearer": []}] and "security" not in without
    rows = with_token["paths"]["/api/v1/collections/{name}/rows"]["get"]
    assert set(rows["responses"]) == {"200", "400", "401", "404", "406", "422", "500", "503", "504"}
    assert set(rows["responses"]["200"]["content"]) == {JSON, NDJSON, ARROW}
    assert "401" not in without["paths"]["/api/v1/status"]["get"]["responses"]
    kinds = openapi.SCHEMAS["Problem"]["properties"]["type"]["enum"]
    assert len(kinds) == len(KINDS)
