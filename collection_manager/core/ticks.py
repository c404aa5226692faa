"""Ticks: the controller's requests that move the log's time forward
(docs/concepts/leases-and-retention.md).

Leases are measured in *log time*, the time of the newest tick the consumer applied in a
partition, never in the wall clock: a stopped, lagging or disconnected pipeline applies no
tick, so no lease expires while it is away. Every lease-check interval the controller
publishes one tick to each partition of the topic.

A tick is an ordinary ``Heartbeat`` of the reserved replica id :data:`CONTROLLER_ID` whose
``sent_at`` is the controller's tick clock, so the wire format is unchanged and an older
consumer reads it as one more heartbeat. Its epoch is issued from the controller's counter
like any other, so the consumer's epoch check applies to it unchanged. ``add_replica``
refuses the reserved id, so no real replica can be mistaken for the controller.
"""

from __future__ import annotations

from collections.abc import Iterable

from collection_manager.core.errors import InvalidNameError
from collection_manager.core.names import check_replica_id
from collection_manager.core.requests import Heartbeat, Request

# Valid under the name rule (the consumer must accept ticks), reserved by add_replica.
CONTROLLER_ID = "cm-controller"


def is_tick(request: Request) -> bool:
    """Whether ``request`` is a tick of the controller (and not a replica's heartbeat)."""
    return isinstance(request, Heartbeat) and request.replica_id == CONTROLLER_ID


def newest_tick(requests: Iterable[Request]) -> int | None:
    """The newest tick time among ``requests`` (one partition), or None without a tick."""
    times = [
        r.sent_at
        for r in requests
        if isinstance(r, Heartbeat) and r.replica_id == CONTROLLER_ID and r.sent_at is not None
    ]
    return max(times) if times else None


def check_member_id(replica_id: object) -> None:
    """Checks an id a replica may be added under: the name rule, and not the reserved one.

    Raises:
        InvalidNameError: outside the name rule, or the controller's own id.
    """
    check_replica_id(replica_id)
    if replica_id == CONTROLLER_ID:
        raise InvalidNameError(f"replica id {CONTROLLER_ID!r} is reserved for the controller")


class TickClock:
    """The controller's tick times: the wall clock, but never backwards, and standing still
    while its ticks cannot be published.

    Every tick time is above every earlier one and above the newest log time the
    controller read, so a lease granted at a tick time can only expire through ticks
    published after it (a wall clock set back, or a restarted controller behind the log,
    would otherwise let old ticks count).

    While Kafka takes no tick, no replica's heartbeat gets through either: the heartbeats
    wait in the agents' producers. A first tick after the outage at the wall clock would
    jump log time over it, and expire every lease whose heartbeats the consumer applies
    after that tick. So after a lost tick the clock stands still (each tick 1 ms on) until
    one is published again, and goes on from there at the wall clock's pace: the outage
    does not count.
    """

    def __init__(self) -> None:
        self.last = 0
        self._behind_ms = 0  # wall time that did not count: ticks could not be published
        self._stalled = False  # the last tick was lost

    def next(self, wall_ms: int, log_time: int = 0) -> int:
        """The next tick time, at least ``wall_ms`` less the time ticks were lost, above
        ``log_time`` and the last."""
        if self._stalled:
            self._behind_ms = max(self._behind_ms, wall_ms - (self.last + 1))
        self.last = max(wall_ms - self._behind_ms, log_time + 1, self.last + 1)
        return self.last

    def published(self, acknowledged: bool) -> None:
        """Whether the last tick reached Kafka (a lost one stops the clock)."""
        self._stalled = not acknowledged
