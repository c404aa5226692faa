"""The demo's pure parts: its plan, and what the live view shows (no I/O, no rich).

The plan names the replicas and each one's fate: most survive, one is removed through the
controller (a fenced delete retracts its rows at once) and one is SIGKILLed (its rows stay
until its lease expires and the controller's lease check removes it). A :class:`Frame` is
one observation of the whole pipeline; :func:`replica_table`, :func:`collection_table` and
:func:`progress_line` turn it into the cells and the plain line that ``demo_view`` prints.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence

SURVIVE = "survive"
REMOVE = "remove"
KILL = "kill"

MIN_REPLICAS = 3
MIN_DURATION_S = 10.0
# When, as a share of the publishing time, the controller removes one replica and the
# demo SIGKILLs another (after every replica is visible): late enough to watch rows arrive,
# early enough for the killed one's lease to expire while the survivors still publish.
REMOVE_AT = 0.25
KILL_AT = 0.4


@dataclasses.dataclass(frozen=True)
class Plan:
    """Who runs, for how long, and what happens to whom.

    Attributes:
        fates: replica id -> ``survive``, ``remove`` or ``kill``, in display order.
        duration_s: about how long the agents publish.
        steps: changes each agent publishes after its snapshot (then it settles).
        remove_at_s: seconds after the replicas are visible when one is removed.
        kill_at_s: seconds after the replicas are visible when one is SIGKILLed.
    """

    fates: Mapping[str, str]
    duration_s: float
    steps: int
    remove_at_s: float
    kill_at_s: float

    @classmethod
    def of(cls, replicas: int, duration_s: float, step_interval_ms: int) -> Plan:
        """The plan for ``replicas`` replicas publishing for about ``duration_s`` seconds.

        Raises:
            ValueError: for fewer than 3 replicas or less than 10 s.
        """
        if replicas < MIN_REPLICAS:
            raise ValueError(f"the demo needs at least {MIN_REPLICAS} replicas, not {replicas}")
        if duration_s < MIN_DURATION_S:
            raise ValueError(f"the demo needs at least {MIN_DURATION_S:.0f} s, not {duration_s}")
        ids = [f"demo-r{i}" for i in range(1, replicas + 1)]
        fates = dict.fromkeys(ids, SURVIVE)
        fates[ids[1]], fates[ids[2]] = REMOVE, KILL
        steps = math.ceil(duration_s * 1000 / step_interval_ms)
        return cls(fates, duration_s, steps, duration_s * REMOVE_AT, duration_s * KILL_AT)

    def with_fate(self, fate: str) -> list[str]:
        """The replicas with ``fate``, in display order."""
        return [replica for replica, f in self.fates.items() if f == fate]

    @property
    def removed(self) -> str:
        """The replica removed through the controller."""
        return self.with_fate(REMOVE)[0]

    @property
    def killed(self) -> str:
        """The replica whose process is SIGKILLed."""
        return self.with_fate(KILL)[0]

    @property
    def survivors(self) -> list[str]:
        """The replicas that run to the end."""
        return self.with_fate(SURVIVE)

    def due(self, elapsed_s: float, done: Sequence[str]) -> list[str]:
        """The fates (``remove``, ``kill``) due at ``elapsed_s`` that are not ``done`` yet."""
        schedule = ((REMOVE, self.remove_at_s), (KILL, self.kill_at_s))
        return [fate for fate, at in schedule if elapsed_s >= at and fate not in done]


@dataclasses.dataclass(frozen=True)
class ReplicaView:
    """One replica as the view shows it.

    Attributes:
        replica_id: the replica.
        fate: its fate in the plan, or what happened to it (``removed``, ``killed``).
        process: its agent process (``running``, ``SIGKILLed``, ``exited 1``, ...).
        epoch: its incarnation, once the controller added it.
        state: ``active``, ``removing`` or ``removed``, as the controller records it.
        lease_s: seconds until its lease expires unless renewed (active only).
        rows: collection -> its rows in Redis.
    """

    replica_id: str
    fate: str
    process: str
    epoch: int | None
    state: str | None
    lease_s: float | None
    rows: Mapping[str, int]


@dataclasses.dataclass(frozen=True)
class ConsumerView:
    """The Spark consumer as the view shows it.

    Attributes:
        batches: micro-batches it completed (all runs, as ``status`` counts them).
        requests_per_s: requests read per second in its latest batch.
        lag: requests in Kafka it has not applied yet; None before its first batch.
        updates: updates applied to the collections (all replicas, all runs).
        dead_letters: requests it sent to the dead-letter topic.
    """

    batches: int = 0
    requests_per_s: float = 0.0
    lag: int | None = None
    updates: int = 0
    dead_letters: int = 0


@dataclasses.dataclass(frozen=True)
class Frame:
    """One observation of the demo.

    Attributes:
        elapsed_s: seconds since the demo started.
        phase: what the demo is doing.
        collections: the collections, in column order.
        replicas: the plan's replicas.
        totals: collection -> all its rows in Redis (every replica).
        consumer: the consumer.
        events: what happened so far, oldest first.
        console: the URL of the web console (``server run``) that shows the demo's fleet live,
            once it answers; empty before.
        console_note: how long the console stays (until the demo ends, or with ``--keep``
            until Ctrl-C), said beside its URL.
    """

    elapsed_s: float
    phase: str
    collections: Sequence[str] = ()
    replicas: Sequence[ReplicaView] = ()
    totals: Mapping[str, int] = dataclasses.field(default_factory=dict)
    consumer: ConsumerView = ConsumerView()
    events: Sequence[str] = ()
    console: str = ""
    console_note: str = ""


def replica_table(frame: Frame) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the replicas: fate, process, membership and rows in Redis."""
    headers = ["replica", "fate", "process", "epoch", "state", "lease", "rows"]
    lines = [
        [
            replica.replica_id,
            replica.fate,
            replica.process,
            "-" if replica.epoch is None else str(replica.epoch),
            replica.state or "-",
            "-" if replica.lease_s is None else f"{max(replica.lease_s, 0.0):.1f}s",
            str(sum(replica.rows.values())),
        ]
        for replica in frame.replicas
    ]
    return headers, lines


def collection_table(frame: Frame) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the collections: rows in Redis per replica, and all of them."""
    headers = ["collection", *(r.replica_id for r in frame.replicas), "all replicas"]
    lines = [
        [
            collection,
            *(str(r.rows.get(collection, 0)) for r in frame.replicas),
            str(frame.totals.get(collection, 0)),
        ]
        for collection in frame.collections
    ]
    return headers, lines


def consumer_line(consumer: ConsumerView) -> str:
    """The consumer in one line."""
    lag = "-" if consumer.lag is None else str(consumer.lag)
    return (
        f"consumer: lag {lag}, {consumer.requests_per_s:.0f} requests/s, "
        f"{consumer.batches} batches, {consumer.updates} updates applied, "
        f"{consumer.dead_letters} dead letters"
    )


def progress_line(frame: Frame) -> str:
    """The frame in one plain line, for output that is not a terminal."""
    replicas = ", ".join(
        f"{r.replica_id} {sum(r.rows.values())} rows ({r.state or '-'}, {r.process})"
        for r in frame.replicas
    )
    lag = "-" if frame.consumer.lag is None else str(frame.consumer.lag)
    line = f"{frame.elapsed_s:6.1f}s {frame.phase}"
    if replicas:
        line += f" | {replicas}"
    return f"{line} | lag {lag}, {frame.consumer.requests_per_s:.0f} requests/s"
