"""``/api/v1/collections/{name}/rows``: the rows at one consistent time, as ``query`` reads
them (``stepped_snapshot``: bounded steps, a bucketed collection at one consistent cut).

``where`` takes ``query --where``'s terms (repeat it: all must hold), ``limit`` at most
that many rows (the first the read finds; it stops reading there). The ``Accept`` header
picks JSON (``query --format json``'s document, at most ``CM_HTTP_MAX_ROWS`` rows), NDJSON
or an Arrow IPC stream (no bound but ``limit``). A JSON read that finds more rows than its
bound is refused (422) naming it, so that a client never takes a part for the whole; the
read stops one row past the bound, so the refusal costs no more.

NDJSON and Arrow are streamed (``storage/streamed.py``): the time is read and the first
step made within the request's time (``CM_HTTP_REQUEST_TIMEOUT_S``, else 504), then each
step is read only once the one before was written to the client, so the server holds one
step whatever the size of the answer, and a client that stops reading holds the read back.
Such an answer takes a stream's slot (``CM_HTTP_MAX_STREAMS``), as a change stream does:
it may last minutes. A failure after the first step (Redis gone, the log trimmed under the
read) can no longer be a problem document: the answer ends without its last chunk, which
every HTTP/1.1 client reports as a broken answer, and the log says why.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator

from collection_manager.core.names import check_collection_name
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.http import metrics
from collection_manager.http.context import Call
from collection_manager.http.encode import arrow_answer, json_answer, ndjson_answer
from collection_manager.http.exchange import Answer, Request
from collection_manager.http.negotiation import ARROW, JSON, NDJSON, choose
from collection_manager.http.params import Query, parse_limit, parse_where_terms
from collection_manager.http.problems import Problem
from collection_manager.reading.where import parse_where, split_term
from collection_manager.storage.reads import Snapshot
from collection_manager.storage.streamed import RowStream, stream_rows

OFFERED = (JSON, NDJSON, ARROW)
# `limit` of a streamed answer: any number of rows a collection can hold.
MAX_LIMIT = 2**53 - 1
_STREAMED = f"ask for NDJSON (Accept: {NDJSON}) or Arrow (Accept: {ARROW}), which stream"
SETTING = "CM_HTTP_MAX_ROWS"


def _too_many(detail: str, bound: int, parameter: str | None) -> Problem:
    return Problem("too-many-rows", detail, parameter=parameter, bound=bound)


def streams(request: Request) -> bool:
    """Whether the rows asked for are streamed (NDJSON or Arrow), and take a stream's slot."""
    try:
        return choose(request.header("Accept"), OFFERED) != JSON
    except Problem:
        return False  # refused by the handler (406), which takes no stream


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
    if media != JSON:
        return _streamed(call, name, terms, limit, media)
    # One row past the bound tells a JSON read that there are more, and reads no further.
    read_limit = bound + 1 if limit is None else limit

    def read() -> tuple[CollectionSpec, Snapshot]:
        store = call.sources.store()
        spec = store.spec(name)
        where = parse_where(terms, spec, "where")
        return spec, store.stepped_snapshot(spec.name, where, read_limit)

    spec, snapshot = call.read(read)
    if len(snapshot.rows) > bound:
        matching = " matching where" if terms else ""
        raise _too_many(
            f"{spec.name} holds more than {bound} rows{matching}, the most a JSON answer "
            f"holds ({SETTING}): {_STREAMED}, or give limit",
            bound,
            None,
        )
    metrics.ROWS.labels(media).inc(len(snapshot.rows))
    return Answer(json_answer(spec, snapshot), JSON)


Step = dict[Row, int]


def _streamed(call: Call, name: str, terms: list[str], limit: int | None, media: str) -> Answer:
    """The rows as NDJSON or Arrow, a step at a time: the time and the first step within
    the request's time, the others as the client takes them."""

    def start() -> tuple[CollectionSpec, RowStream, Step | None]:
        store = call.sources.store()
        spec = store.spec(name)
        where = parse_where(terms, spec, "where")
        stream = stream_rows(call.sources.client, spec, where, limit)
        try:
            return spec, stream, next(stream.steps, None)
        except BaseException:
            stream.close()
            raise

    spec, stream, first = call.read(start)
    steps = _counted(itertools.chain([] if first is None else [first], stream.steps), media)
    as_of = stream.as_of_text if stream.cut is not None else stream.as_of
    encode = ndjson_answer if media == NDJSON else arrow_answer
    return Answer(_Body(encode(spec, as_of, steps), stream), media)


def _counted(steps: Iterator[Step], media: str) -> Iterator[Step]:
    for step in steps:
        metrics.ROWS.labels(media).inc(len(step))
        yield step


class _Body:
    """The parts of a streamed answer; closing it (the server does once the answer is
    written, its client went away, or a step failed) ends the read and frees what it
    holds, even when no part was asked for (HEAD)."""

    def __init__(self, parts: Iterator[bytes], stream: RowStream) -> None:
        self._parts, self._stream = parts, stream

    def __iter__(self) -> Iterator[bytes]:
        return self._parts

    def close(self) -> None:
        close = getattr(self._parts, "close", None)
        if close is not None:
            close()
        self._stream.close()
