"""The safe filter language of deletes and reads: data, never code
(docs/concepts/requests-and-ordering.md, docs/concepts/deletes.md).

Build filters with the constructors (``eq("replica_id", "r1")``, ``and_(...)``), check them
with :func:`validate`, run them with :func:`evaluate` or :func:`compile_filter`, answer them
from indexes with :func:`index_lookup`, and show them with :func:`describe`.
"""

from collection_manager.core.filters.describe import describe
from collection_manager.core.filters.evaluate import Matcher, compile_filter, evaluate, same_value
from collection_manager.core.filters.index import IndexKey, IndexLookup, index_lookup
from collection_manager.core.filters.tree import (
    CMP_OPS,
    MAX_DEPTH,
    MAX_NODES,
    MAX_VALUES,
    And,
    Cmp,
    CmpOp,
    Filter,
    In,
    IsNull,
    Not,
    Or,
    Prefix,
    and_,
    check_shape,
    children,
    eq,
    ge,
    gt,
    in_,
    is_null,
    le,
    lt,
    ne,
    not_,
    or_,
    prefix,
    shape,
    walk,
)
from collection_manager.core.filters.validate import validate

__all__ = [
    "CMP_OPS",
    "MAX_DEPTH",
    "MAX_NODES",
    "MAX_VALUES",
    "And",
    "Cmp",
    "CmpOp",
    "Filter",
    "In",
    "IndexKey",
    "IndexLookup",
    "IsNull",
    "Matcher",
    "Not",
    "Or",
    "Prefix",
    "and_",
    "check_shape",
    "children",
    "compile_filter",
    "describe",
    "eq",
    "evaluate",
    "ge",
    "gt",
    "in_",
    "index_lookup",
    "is_null",
    "le",
    "lt",
    "ne",
    "not_",
    "or_",
    "prefix",
    "same_value",
    "shape",
    "validate",
    "walk",
]
