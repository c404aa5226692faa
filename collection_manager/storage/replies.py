"""The replies of the store's writing functions (``functions.lua``), read as values."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from collection_manager.storage.client import as_text

# The first element of cm_apply's reply when it refused a chunk (see functions.lua).
REFUSED = "refused"
# The reply of a writing function that wrote nothing because a delete is in progress.
HELD = "held"
# cm_continue's first element: "done" when the delete in progress ended (or there was none).
DONE = "done"


@dataclasses.dataclass(frozen=True)
class Refusal:
    """cm_apply wrote nothing: op ``index`` of the chunk would take ``row`` to ``value``."""

    index: int
    row: str
    value: int


def is_held(reply: Any) -> bool:
    """Whether a writing function wrote nothing because a delete is in progress."""
    return isinstance(reply, list) and bool(reply) and as_text(reply[0]) == HELD


def is_done(state: bytes | str) -> bool:
    """Whether a stepped function's first element says it has no more steps to take."""
    return as_text(state) == DONE


def refusal_or_counters(reply: Any) -> Any:
    """A writing function's reply: its ``Refusal``, its counters, or (neither) as it is."""
    if isinstance(reply, list) and reply and as_text(reply[0]) == REFUSED:
        return Refusal(int(reply[1]) - 1, as_text(reply[2]), int(reply[3]))
    if isinstance(reply, list):
        return counters(reply)
    return reply


def counters(reply: Sequence[Any]) -> dict[str, int]:
    """The counters of a function's reply: name, value, name, value, ..."""
    return {as_text(n): int(v) for n, v in zip(reply[::2], reply[1::2], strict=True)}


def add(totals: dict[str, int], more: dict[str, int]) -> dict[str, int]:
    """Counters summed by name."""
    return {name: totals.get(name, 0) + more.get(name, 0) for name in totals.keys() | more.keys()}
