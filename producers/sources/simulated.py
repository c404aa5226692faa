"""The ``simulated`` source: the demo's and the tests' replicas (:mod:`producers.simulated`).

It publishes the built-in introspection collections, from one simulated replica per
collection (identically seeded, so that each collection's thread steps its own), and the
agent process's own resource usage as ``replica_metrics``.
"""

from __future__ import annotations

import argparse
import zlib
from collections.abc import Mapping

from producers.resources import REPLICA_METRICS, ResourceSource
from producers.simulated import COLUMNS, ERROR_COUNTS, HYDRATION_STATUS, SimulatedReplica
from producers.sources.plugin import SourceCollection, SourceContext
from producers.subscribe import Source
from schemas.introspection import INTROSPECTION_COLLECTIONS, introspection_spec


def _declared(name: str) -> SourceCollection:
    # The built-in row schemas (schemas/rows/) are the record of these shapes.
    schema = introspection_spec(name).row_schema
    expires = name in (ERROR_COUNTS, HYDRATION_STATUS)  # a status goes stale; sizes do not
    return SourceCollection(name, tuple(schema["fields"][1:]), schema.get("doc", ""), expires)


def seed_of(replica_id: str, seed: int | None) -> int:
    """The simulation's seed: ``seed``, or one derived from the replica id."""
    return zlib.crc32(replica_id.encode()) if seed is None else seed


class SimulatedPlugin:
    """Simulated frontiers, arrangements, errors and hydration, and real resource usage."""

    name = "simulated"
    summary = (
        "simulated compute replicas (frontiers, arrangement sizes, errors, hydration) and "
        "the agent's own CPU and memory"
    )
    collections: tuple[SourceCollection, ...] = tuple(
        _declared(name) for name in INTROSPECTION_COLLECTIONS
    )

    def add_arguments(self, parser: argparse.ArgumentParser) -> None:
        """``--workers``, ``--dataflows``, ``--seed``."""
        parser.add_argument(
            "--workers", type=int, default=4, help="simulated workers (default %(default)s)"
        )
        parser.add_argument(
            "--dataflows", type=int, default=8, help="simulated dataflows (default %(default)s)"
        )
        parser.add_argument(
            "--seed", type=int, help="fixes the simulated history (default: from the replica id)"
        )

    def create(self, options: argparse.Namespace, context: SourceContext) -> Mapping[str, Source]:
        """One simulator per simulated collection, and the process's resource usage."""
        replica_id = context.replica_id
        return simulated_sources(replica_id, options.workers, options.dataflows, options.seed)


def simulated_sources(
    replica_id: str, workers: int = 4, dataflows: int = 8, seed: int | None = None
) -> dict[str, Source]:
    """The ``simulated`` source's collections, each with its own source object."""
    fixed = seed_of(replica_id, seed)
    sources: dict[str, Source] = {
        name: SimulatedReplica(workers, dataflows, fixed) for name in COLUMNS
    }
    sources[REPLICA_METRICS] = ResourceSource()
    return sources


PLUGIN = SimulatedPlugin()
