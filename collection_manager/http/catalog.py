"""``/api/v1/collections`` and ``/api/v1/collections/{name}``: the catalog and where each
collection stands (rows, time; of a bucketed one, its buckets' sums and each bucket's)."""

from __future__ import annotations

import dataclasses
from typing import Any

from collection_manager.core.names import check_collection_name
from collection_manager.http.context import Call
from collection_manager.http.exchange import Answer, Request, json_answer
from collection_manager.http.params import Query
from collection_manager.reading.status import (
    CollectionInfo,
    collection_info,
    collection_infos,
    columns_json,
)


def collection_json(info: CollectionInfo) -> dict[str, Any]:
    """What the listing shows of a collection: its name, rows, time (a bucketed one's: its
    buckets' sums), columns (each with its type, nullability and whether it is indexed),
    indexed columns, buckets and bucket column (null when unbucketed)."""
    spec = info.spec
    return {
        "name": spec.name,
        "rows": info.rows,
        "time": info.time,
        "columns": columns_json(spec),
        "indexed_columns": list(spec.indexed_columns),
        "buckets": spec.buckets,
        "bucket_column": spec.bucket_column if spec.buckets > 1 else None,
    }


def collection_detail(info: CollectionInfo) -> dict[str, Any]:
    """``collection_json`` and more: the counters of what was applied, the rows with a TTL
    and the next expiry (ms), the row schema, and each bucket's rows and time (empty when
    unbucketed)."""
    return {
        **collection_json(info),
        "counters": info.counters,
        "ttl": {"rows": info.ttl_rows, "next_expiry_ms": info.next_expiry},
        "row_schema": dict(info.spec.row_schema),
        "bucket_rows": [dataclasses.asdict(bucket) for bucket in info.buckets],
    }


def list_collections(call: Call, request: Request) -> Answer:
    """Every collection (one dropped while they are read is left out)."""
    Query(request.query)
    infos = call.read(lambda: collection_infos(call.sources.store()))
    return json_answer({"collections": [collection_json(info) for info in infos]})


def show_collection(call: Call, request: Request) -> Answer:
    """One collection, with its counters and rows per bucket."""
    Query(request.query)
    name = request.arguments["name"]
    check_collection_name(name)

    def read() -> CollectionInfo:
        store = call.sources.store()
        return collection_info(store, store.spec(name).name)

    return json_answer(collection_detail(call.read(read)))
