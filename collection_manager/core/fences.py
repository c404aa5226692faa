"""Fences: the record that a replica's epochs up to a number are dead
(docs/concepts/epochs-and-fences.md).

- The record: :class:`Fence`, carried by a removal's delete (``core/requests.Delete``) and
  kept per collection in its ``fences`` hash (``storage/keys.CollectionKeys.fences``,
  read by ``storage/reads.StoreReader.fences``).
- The rule: only an epoch the controller issued may fence (``core/epochs.py``).
- The fuse's contract: ``functions.lua``'s ``is_fenced`` drops every later append of a
  fenced epoch and counts it (``fused_appends``); ``fence`` only ever raises the number.
"""

from __future__ import annotations

import dataclasses


@dataclasses.dataclass(frozen=True)
class Fence:
    """Epochs ``<= epoch`` of ``replica_id`` are dead (docs/concepts/epochs-and-fences.md)."""

    replica_id: str
    epoch: int
