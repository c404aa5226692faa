"""The built-in introspection collections (seed 003) and their row schemas (``rows/``).

Every introspection row starts with the ``replica_id`` that produced it, and that column
is indexed, so deleting a replica's rows reads only those rows (docs/concepts/deletes.md).
"""

from __future__ import annotations

import functools

from collection_manager.core.specs import CollectionSpec
from schemas.registry import load_avsc

INTROSPECTION_COLLECTIONS = (
    "compute_frontiers",
    "arrangement_sizes",
    "error_counts",
    "hydration_status",
    "replica_metrics",
)
REPLICA_COLUMN = "replica_id"


def introspection_spec(name: str) -> CollectionSpec:
    """The spec of one built-in introspection collection, from ``rows/<name>.avsc``.

    Raises:
        SchemaError: when there is no such row schema or it is malformed.
    """
    return _spec(name)


@functools.cache
def _spec(name: str) -> CollectionSpec:
    return CollectionSpec(name, load_avsc(f"rows/{name}.avsc"), (REPLICA_COLUMN,))


def introspection_specs() -> tuple[CollectionSpec, ...]:
    """The specs of all built-in introspection collections."""
    return tuple(_spec(name) for name in INTROSPECTION_COLLECTIONS)
