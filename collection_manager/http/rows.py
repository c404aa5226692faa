"""``/api/v1/collections/{name}/rows``: the rows at one consistent time, as ``query`` reads
them (``stepped_snapshot``: bounded steps, a bucketed collection at one consistent cut).

``where`` takes ``query --where``'s terms (repeat it: all must hold), ``limit`` at most
that many rows (the first the read finds; it stops reading there). The ``Accept`` header
picks JSON (``query --format json``'s document, at most ``CM_HTTP_MAX_ROWS`` rows), NDJSON
or an Arrow IPC stream (both streamed: no bound but ``limit``). A JSON read that finds more
rows than its bound is refused (422) naming it, so that a client never takes a part for
the whole; the read stops one row past the bound, so the refusal costs no more.
"""

from __future__ import annotations

from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec
from collection_manager.http import metrics
from collection_manager.http.context import Call
from collection_manager.http.encode import arrow_answer, json_answer, ndjson_answer
from collection_manager.http.exchange import Answer, Request
from collection_manager.http.negotiation import ARROW, JSON, NDJSON, choose
from collection_manager.http.params import Query, parse_limit, parse_where_terms
from collection_manager.http.problems import Problem
from collection_manager.reading.where import parse_where, split_term
from collection_manager.storage.reads import Snapshot

OFFERED = (JSON, NDJSON, ARROW)
# `limit` of a streamed answer: any number of rows a collection can hold.
MAX_LIMIT = 2**53 - 1
_STREAMED = f"ask for NDJSON (Accept: {NDJSON}) or Arrow (Accept: {ARROW}), which stream"
SETTING = "CM_HTTP_MAX_ROWS"


def _too_many(detail: str, bound: int, parameter: str | None) -> Problem:
    return Problem("too-many-rows", detail, parameter=parameter, bound=bound)


def read_rows(call: Call, request: Request) -> Answer:
    """The rows of ``{name}`` matching ``where``, at most ``limit``, as ``Accept`` asks."""
    media = choose(request.header("Accept"), OFFERED)
    query = Query(request.query, single=("limit",), repeated=("where",))
    name = request.arguments["name"]
    check_collection_name(name)
    terms = parse_where_terms(query.all("where"))
    for term in terms:  # the syntax, before anything is read
        split_term(term, "where")
    limit = parse_limit(query.one("limit"), MAX_LIMIT)
    bound = call.config.http_max_rows
    if media == JSON and limit is not None and limit > bound:
        raise _too_many(
            f"limit={limit} is more rows than a JSON answer holds ({SETTING}={bound}): "
            f"{_STREAMED}, or give a limit of at most {bound}",
            bound,
            "limit",
        )
    # One row past the bound tells a JSON read that there are more, and reads no further.
    read_limit = bound + 1 if media == JSON and limit is None else limit

    def read() -> tuple[CollectionSpec, Snapshot]:
        store = call.sources.store()
        spec = store.spec(name)
        where = parse_where(terms, spec, "where")
        return spec, store.stepped_snapshot(spec.name, where, read_limit)

    spec, snapshot = call.read(read)
    if media == JSON and len(snapshot.rows) > bound:
        matching = " matching where" if terms else ""
        raise _too_many(
            f"{spec.name} holds more than {bound} rows{matching}, the most a JSON answer "
            f"holds ({SETTING}): {_STREAMED}, or give limit",
            bound,
            None,
        )
    metrics.ROWS.labels(media).inc(len(snapshot.rows))
    if media == JSON:
        return Answer(json_answer(spec, snapshot), JSON)
    body = ndjson_answer(spec, snapshot) if media == NDJSON else arrow_answer(spec, snapshot)
    return Answer(body, media)
