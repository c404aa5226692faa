"""Content negotiation: which of the media types an endpoint offers a request's ``Accept``
header prefers (RFC 9110 §12.5.1).

Each offered type gets the weight of the most specific range that matches it (``a/b`` over
``a/*`` over ``*/*``); the heaviest above 0 wins, and among equals the endpoint's own order
decides (JSON first). No ``Accept`` header means anything. A range that cannot be parsed is
skipped, as if it were not there; when nothing acceptable is left, the answer is 406.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from collection_manager.http.problems import Problem

JSON = "application/json"
NDJSON = "application/x-ndjson"
ARROW = "application/vnd.apache.arrow.stream"
EVENT_STREAM = "text/event-stream"


@dataclasses.dataclass(frozen=True)
class MediaRange:
    """One range of an ``Accept`` header: ``type/subtype`` (either may be ``*``), weight."""

    type: str
    subtype: str
    weight: float

    def specificity(self, media_type: str) -> int | None:
        """How specifically this range matches ``media_type`` (2 exact, 1 ``type/*``,
        0 ``*/*``), or None when it does not."""
        kind, _, sub = media_type.partition("/")
        if self.type == "*":
            return 0
        if self.type != kind:
            return None
        if self.subtype == "*":
            return 1
        return 2 if self.subtype == sub else None


def _weight(text: str) -> float | None:
    try:
        weight = float(text)
    except ValueError:
        return None
    # At most three decimals, 0 to 1 (RFC 9110 §12.4.2); anything else is no weight.
    return weight if 0 <= weight <= 1 and len(text) <= 5 else None


def parse_accept(header: str) -> list[MediaRange]:
    """The ranges of an ``Accept`` header, in order; unparsable ones left out."""
    ranges = []
    for item in header.split(","):
        media, *params = (part.strip() for part in item.split(";"))
        kind, slash, sub = media.lower().partition("/")
        if not slash or not kind or not sub or (kind == "*" and sub != "*"):
            continue
        weight: float | None = 1.0
        for param in params:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                weight = _weight(value.strip())
        if weight is not None:
            ranges.append(MediaRange(kind, sub, weight))
    return ranges


def weight_of(media_type: str, ranges: Sequence[MediaRange]) -> float:
    """The weight ``ranges`` give ``media_type``: that of the most specific match, 0 when
    none matches."""
    best: tuple[int, float] | None = None
    for media_range in ranges:
        specificity = media_range.specificity(media_type)
        if specificity is not None and (best is None or specificity > best[0]):
            best = (specificity, media_range.weight)
    return 0.0 if best is None else best[1]


def choose(accept: str | None, offered: Sequence[str]) -> str:
    """The offered media type ``accept`` prefers.

    Raises:
        Problem: 406, naming what is offered, when it accepts none of them.
    """
    if accept is None or not accept.strip():
        return offered[0]
    ranges = parse_accept(accept)
    weights = [weight_of(media_type, ranges) for media_type in offered]
    best = max(weights)
    if best <= 0:
        raise Problem(
            "not-acceptable",
            f"Accept: {accept[:200]!r} accepts none of what this endpoint answers: "
            + ", ".join(offered),
            parameter="Accept",
        )
    return offered[weights.index(best)]
