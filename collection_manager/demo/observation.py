"""The pipeline at one moment, as each tick of a demo run reads it through ``observe.py``'s
:class:`~collection_manager.demo.observe.Observer`: the controller's records, the rows by
replica, and the consumer."""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping

from collection_manager.control.controller import ReplicaStatus
from collection_manager.demo.frames import ConsumerView
from collection_manager.demo.observe import Observer


@dataclasses.dataclass(frozen=True)
class Observation:
    """The pipeline at one moment."""

    statuses: Mapping[str, ReplicaStatus]
    rows: Mapping[str, Counter[str]]  # collection -> rows by replica
    totals: Mapping[str, int]
    consumer: ConsumerView

    def rows_of(self, replica: str) -> int:
        """The replica's rows in all collections."""
        return sum(counts[replica] for counts in self.rows.values())


def observe(observer: Observer, lag_end: Mapping[int, int] | None) -> Observation:
    """One look at the pipeline; the consumer's lag against ``lag_end`` (None: Kafka's now)."""
    rows, totals = observer.rows()
    consumer = observer.consumer(lag_end)
    return Observation(observer.statuses(), rows, totals, consumer)
