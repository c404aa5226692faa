"""Requests to and from the plain dicts fastavro reads and writes (``requests.avsc``).

Filters are flattened to a pre-order list of nodes, each ``and``/``or``/``not`` node
followed by its ``arity`` children. Rebuilding is iterative and bounded by the filter
limits, so a hostile message can neither recurse deeply nor build a huge tree.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from collection_manager.core.buckets import BucketPart
from collection_manager.core.fences import Fence
from collection_manager.core.filters import (
    MAX_DEPTH,
    MAX_NODES,
    And,
    Cmp,
    Filter,
    In,
    IsNull,
    Not,
    Or,
    Prefix,
    walk,
)
from collection_manager.core.requests import (
    Append,
    Delete,
    Heartbeat,
    ReplicaAdded,
    ReplicaRemoved,
    Request,
)
from schemas.errors import SerializationError

NAMESPACE = "collection_manager.wire"
Record = dict[str, Any]


def filter_to_nodes(node: Filter) -> list[Record]:
    """The wire nodes of a filter, in pre-order."""
    return [_node_record(current) for current, _ in walk(node)]


def _node_record(node: Filter) -> Record:
    record: Record = {"op": "", "column": None, "value": None, "values": [], "arity": 0}
    if isinstance(node, Cmp):
        record.update(op=node.op, column=node.column, value=node.value)
    elif isinstance(node, In):
        record.update(op="in", column=node.column, values=list(node.values))
    elif isinstance(node, Prefix):
        record.update(op="prefix", column=node.column, value=node.prefix)
    elif isinstance(node, IsNull):
        record.update(op="is_null", column=node.column)
    elif isinstance(node, And | Or):
        record.update(op="and" if isinstance(node, And) else "or", arity=len(node.terms))
    else:
        record.update(op="not", arity=1)
    return record


def _leaf(record: Mapping[str, Any]) -> Filter:
    op, column, value = record["op"], record["column"], record["value"]
    if column is None:
        raise SerializationError(f"filter node {op} has no column")
    if op == "in":
        return In(column, tuple(record["values"]))
    if op == "is_null":
        return IsNull(column)
    if op == "prefix":
        if not isinstance(value, str):
            raise SerializationError(f"prefix on {column!r} needs a string, got {value!r}")
        return Prefix(column, value)
    return Cmp(op, column, value)


@dataclasses.dataclass
class _Open:
    op: str
    arity: int
    terms: list[Filter] = dataclasses.field(default_factory=list)

    def build(self) -> Filter:
        if self.op == "and":
            return And(tuple(self.terms))
        if self.op == "or":
            return Or(tuple(self.terms))
        return Not(self.terms[0])


def _open(record: Mapping[str, Any], depth: int) -> _Open:
    arity = record["arity"]
    if (record["op"] == "not" and arity != 1) or arity < 0:
        raise SerializationError(f"filter node {record['op']} has arity {arity}")
    if depth > MAX_DEPTH:
        raise SerializationError(f"filter is nested deeper than {MAX_DEPTH} levels")
    return _Open(record["op"], arity)


def _attach(stack: list[_Open], done: Filter | None) -> Filter | None:
    """Hands a finished node to its parent, closing parents that become complete."""
    while done is not None and stack:
        stack[-1].terms.append(done)
        if len(stack[-1].terms) < stack[-1].arity:
            return None
        done = stack.pop().build()
    return done


def nodes_to_filter(nodes: Sequence[Mapping[str, Any]]) -> Filter:
    """The filter of its pre-order wire nodes.

    Raises:
        SerializationError: for an empty, truncated, over-long or over-deep node list.
    """
    if len(nodes) > MAX_NODES:
        raise SerializationError(f"filter has {len(nodes)} nodes, more than {MAX_NODES}")
    stack: list[_Open] = []
    root: Filter | None = None
    for record in nodes:
        if root is not None:
            raise SerializationError("filter has nodes after its root is complete")
        done: Filter | None = None
        if record["op"] in ("and", "or", "not"):
            stack.append(_open(record, len(stack) + 1))
            done = stack.pop().build() if stack[-1].arity == 0 else None
        elif len(stack) + 1 > MAX_DEPTH:
            raise SerializationError(f"filter is nested deeper than {MAX_DEPTH} levels")
        else:
            done = _leaf(record)
        root = _attach(stack, done)
    if root is None:
        raise SerializationError("filter is empty or truncated")
    return root


def request_to_record(request: Request) -> tuple[str, Record]:
    """The union branch name and record of a request."""
    name = type(request).__name__
    if isinstance(request, Append):
        # Not dataclasses.asdict: it would deep-copy every row first.
        record = {f.name: getattr(request, f.name) for f in dataclasses.fields(request)}
        record["updates"] = [{"row": list(row), "diff": diff} for row, diff in request.updates]
        record["bucket"] = _bucket_record(request.bucket)
    elif isinstance(request, Delete):
        fence = None if request.fence is None else dataclasses.asdict(request.fence)
        record = {"collection": request.collection, "filter": filter_to_nodes(request.filter)}
        record.update(fence=fence, reason=request.reason, bucket=_bucket_record(request.bucket))
    else:
        record = dataclasses.asdict(request)
    return f"{NAMESPACE}.{name}", record


def _bucket_record(part: BucketPart | None) -> Record | None:
    return None if part is None else dataclasses.asdict(part)


def _bucket(record: Record | None) -> BucketPart | None:
    # Absent in messages of writers before buckets (Avro fills in the default, None).
    if record is None:
        return None
    return BucketPart(record["bucket"], record["group"], record["parts"])


def _append(r: Record) -> Append:
    updates = tuple((tuple(u["row"]), u["diff"]) for u in r["updates"])
    return Append(
        r["collection"], r["replica_id"], r["epoch"], updates, r["produced_at"],
        r["valid_until"], r["ttl_ms"], _bucket(r.get("bucket")),
    )  # fmt: skip


def _delete(r: Record) -> Delete:
    fence = None if r["fence"] is None else Fence(r["fence"]["replica_id"], r["fence"]["epoch"])
    filter_ = nodes_to_filter(r["filter"])
    return Delete(r["collection"], filter_, r["reason"], fence, _bucket(r.get("bucket")))


_FROM_RECORD: dict[str, Callable[[Record], Request]] = {
    "Append": _append,
    "Delete": _delete,
    "ReplicaAdded": lambda r: ReplicaAdded(r["replica_id"], r["epoch"]),
    "ReplicaRemoved": lambda r: ReplicaRemoved(r["replica_id"], r["epoch"]),
    "Heartbeat": lambda r: Heartbeat(r["replica_id"], r["epoch"], r["sent_at"]),
}


def record_to_request(name: str, record: Record) -> Request:
    """The request of a decoded union branch.

    Raises:
        SerializationError: for an unknown branch or a malformed filter.
    """
    kind = name.rsplit(".", 1)[-1]
    if kind not in _FROM_RECORD:
        raise SerializationError(f"unknown request kind {name!r}")
    return _FROM_RECORD[kind](record)
