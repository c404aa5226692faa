"""``/api/v1/collections`` and ``/api/v1/collections/{name}``: the catalog and where each
collection stands (rows, time; of a bucketed one, its buckets' sums and each bucket's), as
the answers ``collections list`` and ``collections show`` print (``reading/catalog.py``)."""

from __future__ import annotations

from collection_manager.answers import to_json
from collection_manager.core.names import check_collection_name
from collection_manager.http.context import Call
from collection_manager.http.exchange import Answer, Request, json_answer
from collection_manager.http.params import Query
from collection_manager.reading.catalog import (
    CollectionInfo,
    collection_info,
    collection_infos,
    collection_list,
    detail_of,
)


def list_collections(call: Call, request: Request) -> Answer:
    """Every collection (one dropped while they are read is left out)."""
    Query(request.query)
    infos = call.read(lambda: collection_infos(call.sources.store()))
    return json_answer(to_json(collection_list(infos)))


def show_collection(call: Call, request: Request) -> Answer:
    """One collection, with its counters and rows per bucket."""
    Query(request.query)
    name = request.arguments["name"]
    check_collection_name(name)

    def read() -> CollectionInfo:
        store = call.sources.store()
        return collection_info(store, store.spec(name).name)

    return json_answer(to_json(detail_of(call.read(read))))
