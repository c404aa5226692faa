"""The sinks as ``status`` shows them: each sink's process state by its heartbeat, and
the position and lag its last beat said."""

from __future__ import annotations

from typing import Any

import redis

from collection_manager.answers import to_json
from collection_manager.answers.status import SinkStatus
from collection_manager.core.sinks.spec import SinkSpec
from collection_manager.storage.heartbeats import SINK, Liveness, read_liveness
from collection_manager.storage.sinks import SinkCatalog


def sink_summary(spec: SinkSpec, liveness: Liveness) -> dict[str, Any]:
    """A sink as ``status`` shows it: its process' state by its heartbeat, and the position
    and lag its last beat said."""
    last = liveness.last or {}
    return to_json(
        SinkStatus(
            spec.name,
            spec.collection,
            spec.topic,
            liveness.state,  # type: ignore[arg-type]  # a heartbeat's states are the model's
            last.get("position"),
            last.get("behind"),
        )
    )


def read_sinks(client: redis.Redis) -> list[dict[str, Any]]:
    """Every sink (at most ``MAX_SINKS``) with its process' state."""
    return [
        sink_summary(spec, read_liveness(client, SINK, spec.name))
        for spec in SinkCatalog(client).all()
    ]
