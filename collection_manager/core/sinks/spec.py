"""What a sink is: a name, the collection it follows, the topic it writes and its format.

Sinks live in the catalog beside the collections (``storage/sinks.py``), at most
``MAX_SINKS`` of them: each runs a process and holds a Kafka transactional id, so a
deployment has a handful, never one per replica.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from typing import Any

from collection_manager.core.errors import CollectionManagerError
from collection_manager.core.names import check_name

MAX_SINKS = 64
FORMATS = ("json", "avro")
# Kafka's rule for topic names (and "." / ".." are not topics).
_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
PROGRESS_PREFIX = "cm-sink-progress."


class SinkError(CollectionManagerError):
    """A sink that cannot be made, found or run as asked; the message says why."""


def check_topic(topic: str) -> None:
    """Checks ``topic`` against Kafka's rule for topic names.

    Raises:
        SinkError: naming the rule.
    """
    if not _TOPIC.fullmatch(topic) or topic in (".", ".."):
        raise SinkError(
            f"topic {topic[:260]!r} is no Kafka topic name: 1 to 249 of A-Z a-z 0-9 . _ -"
        )
    if topic.startswith(PROGRESS_PREFIX):
        raise SinkError(f"topic {topic!r}: names starting {PROGRESS_PREFIX!r} are the sinks' own")


@dataclasses.dataclass(frozen=True)
class SinkSpec:
    """A sink: it publishes every change of ``collection`` to ``topic``, once, in order.

    Attributes:
        format: ``json`` (a JSON object per change) or ``avro`` (single-object encoding of
            the envelope ``records.envelope_schema`` makes from the row schema).
        created_ms: when it was created (ms since the Unix epoch).
    """

    name: str
    collection: str
    topic: str
    format: str = "json"
    created_ms: int = 0

    def __post_init__(self) -> None:
        check_name(self.name, "sink name")
        check_name(self.collection, "collection name")
        check_topic(self.topic)
        if self.format not in FORMATS:
            raise SinkError(f"format {self.format[:40]!r} is none of {', '.join(FORMATS)}")

    @property
    def progress_topic(self) -> str:
        """The topic whose committed records say how far the sink published: one of its
        own, written in the same Kafka transactions as the changes."""
        return PROGRESS_PREFIX + self.name

    @property
    def transactional_id(self) -> str:
        """The Kafka transactional id of the sink's process: a second process of the same
        sink fences the first, so two never publish at once."""
        return f"cm-sink-{self.name}"

    def record(self) -> dict[str, Any]:
        """The catalog's record of it."""
        return dataclasses.asdict(self)

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> SinkSpec:
        """A sink from its catalog record.

        Raises:
            SinkError: when the record is not one (written by hand, or damaged).
        """
        try:
            return cls(
                str(record["name"]),
                str(record["collection"]),
                str(record["topic"]),
                str(record.get("format", "json")),
                int(record.get("created_ms", 0)),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise SinkError(f"a sink's catalog record is damaged ({exc!r})") from None
