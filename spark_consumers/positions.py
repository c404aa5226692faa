"""Where the consumer starts reading: the pure part (no I/O).

Redis is the source of truth for progress. Spark's checkpoint says where Spark would read
next; when Redis holds less than that for any partition (it lost its tail, or was restored
from an older snapshot), the consumer starts a fresh checkpoint at Redis's progress, and
the watermarks skip whatever of the re-read part Redis did keep.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Mapping

from collection_manager.kafka.identity import TopicIdentity
from collection_manager.storage.progress import Binding

RESET_COMMAND = "collection-manager progress reset"
EARLIEST = -2  # Spark's startingOffsets value for "the earliest offset Kafka holds"


def parse_offset_log(text: str, topic: str) -> dict[int, int] | None:
    """The next offsets of ``topic`` in one file of a Spark checkpoint's ``offsets/`` log.

    The file is a version line, a metadata line, then one JSON line per source; the Kafka
    source's is ``{"topic": {"partition": next offset, ...}}``.
    """
    for line in text.splitlines()[2:]:
        with contextlib.suppress(ValueError):
            offsets = json.loads(line)
            if isinstance(offsets, dict) and isinstance(offsets.get(topic), dict):
                return {int(p): int(o) for p, o in offsets[topic].items()}
    return None


def behind(
    progress: Mapping[int, int], checkpoint: Mapping[int, int]
) -> dict[int, tuple[int, int]]:
    """Partitions where Redis's progress is below the checkpoint's next offset.

    Returns:
        partition -> (the next offset by Redis, the next offset by the checkpoint).
    """
    found = {}
    for partition, next_offset in sorted(checkpoint.items()):
        ours = progress.get(partition, -1) + 1
        if ours < next_offset:
            found[partition] = (ours, next_offset)
    return found


def starting_offsets(topic: str, partitions: Iterable[int], progress: Mapping[int, int]) -> str:
    """Spark's ``startingOffsets`` JSON: after Redis's progress, else the earliest offset.

    Spark wants every partition of a subscribed topic named.
    """
    offsets = {str(p): progress[p] + 1 if p in progress else EARLIEST for p in sorted(partitions)}
    return json.dumps({topic: offsets})


def describe_behind(topic: str, found: Mapping[int, tuple[int, int]]) -> str:
    """One log line: which partitions are read again from where, and why."""
    parts = ", ".join(f"{p}: {ours} (checkpoint {cp})" for p, (ours, cp) in found.items())
    return (
        f"Redis holds less progress on {topic} than the Spark checkpoint (Redis lost its "
        f"latest writes or was restored from an older copy); reading again from partition {parts}"
    )


def mismatch(topic: str, recorded: Binding, now: TopicIdentity) -> str | None:
    """The one-line reason to stop when Redis's progress is of another cluster, else None."""
    if recorded.cluster_id == now.cluster_id:
        return None
    return (
        f"the progress and watermarks in Redis for topic {topic} were written for Kafka cluster "
        f"{recorded.cluster_id} (topic id {recorded.topic_id}); the broker now is cluster "
        f"{now.cluster_id} (topic id {now.topic_id}). To consume this cluster's topic from its "
        f"start on purpose, run: {RESET_COMMAND}"
    )


def recreated(recorded: Binding, now: TopicIdentity) -> bool:
    """Whether the topic was deleted and created again (same cluster and name, new id)."""
    return recorded.cluster_id == now.cluster_id and recorded.topic_id != now.topic_id
