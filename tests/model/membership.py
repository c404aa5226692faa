"""Fencing (the *fuse*) and replica membership (docs/concepts/epochs-and-fences.md, seed 001).

When a replica incarnation is removed, updates it already sent may still be in flight. The
fence table records, per replica, the highest dead epoch; the fuse drops every later
``Append`` from an epoch at or below it, so late data never resurrects deleted rows. A
re-added replica gets a higher epoch and is accepted again.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping


class ModelFences:
    """``replica_id -> highest dead epoch``; fences only ever move up.

    Args:
        entries: initial fences, e.g. as read back from the store.
    """

    def __init__(self, entries: Mapping[str, int] | None = None) -> None:
        self._dead: dict[str, int] = dict(entries or {})

    def fence(self, replica_id: str, epoch: int) -> bool:
        """Records that epochs ``<= epoch`` of ``replica_id`` are dead.

        Returns:
            Whether the table changed (a lower or equal fence changes nothing).
        """
        current = self._dead.get(replica_id)
        if current is not None and epoch <= current:
            return False
        self._dead[replica_id] = epoch
        return True

    def is_fenced(self, replica_id: str, epoch: int) -> bool:
        """Whether ``epoch`` of ``replica_id`` is dead: its appends must be dropped."""
        dead = self._dead.get(replica_id)
        return dead is not None and epoch <= dead

    def dead_epoch(self, replica_id: str) -> int | None:
        """The highest dead epoch of ``replica_id``, or None when it was never fenced."""
        return self._dead.get(replica_id)

    def __contains__(self, replica_id: object) -> bool:
        """Whether ``replica_id`` has any fence (some incarnation of it was removed)."""
        return replica_id in self._dead

    def __iter__(self) -> Iterator[str]:
        return iter(self._dead)

    def __len__(self) -> int:
        return len(self._dead)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ModelFences) and self._dead == other._dead

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"ModelFences({self._dead!r})"

    def as_dict(self) -> dict[str, int]:
        """A copy of the table, in the shape ``StoreReader.fences`` returns."""
        return dict(self._dead)


@dataclasses.dataclass(frozen=True)
class ModelReplica:
    """What the control requests said about one replica.

    Attributes:
        epoch: its latest known epoch.
        alive: False once that epoch was removed.
        last_heartbeat: ``sent_at`` of its latest heartbeat for that epoch, if any.
    """

    epoch: int
    alive: bool = True
    last_heartbeat: int | None = None


class ModelMembership:
    """Replica membership as control requests report it.

    Control requests for an older epoch than the latest known one are stale: they are
    ignored (and counted), so a late ``ReplicaRemoved`` of an old incarnation does not mark
    a re-added replica as dead.
    """

    def __init__(self) -> None:
        self._replicas: dict[str, ModelReplica] = {}
        self.stale = 0

    def _current(self, replica_id: str, epoch: int) -> bool:
        status = self._replicas.get(replica_id)
        if status is not None and epoch < status.epoch:
            self.stale += 1
            return False
        return True

    def added(self, replica_id: str, epoch: int) -> None:
        """A ``ReplicaAdded``: ``epoch`` is the replica's live incarnation."""
        if self._current(replica_id, epoch):
            self._replicas[replica_id] = ModelReplica(epoch)

    def removed(self, replica_id: str, epoch: int) -> None:
        """A ``ReplicaRemoved``: ``epoch`` (and all before it) is dead."""
        if self._current(replica_id, epoch):
            self._replicas[replica_id] = ModelReplica(epoch, alive=False)

    def heartbeat(self, replica_id: str, epoch: int, sent_at: int | None) -> None:
        """A ``Heartbeat``; an unknown replica or newer epoch counts as added."""
        if not self._current(replica_id, epoch):
            return
        status = self._replicas.get(replica_id)
        if status is None or status.epoch != epoch:
            status = ModelReplica(epoch)
        if status.alive and sent_at is not None:
            status = dataclasses.replace(status, last_heartbeat=sent_at)
        self._replicas[replica_id] = status

    def status(self, replica_id: str) -> ModelReplica | None:
        """The replica's status, or None when no control request named it."""
        return self._replicas.get(replica_id)

    def live(self) -> dict[str, int]:
        """``replica_id -> epoch`` of every live replica."""
        return {r: s.epoch for r, s in self._replicas.items() if s.alive}
