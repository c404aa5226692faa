"""A seeded nemesis: from a seed, the faults a chaos run injects and the replicas it adds
and removes, in order. Pure: the harness (``tests/integration/chaos_faults.py``) injects
them into the replicated deployment, and the same seed gives the same sequences (the
machine's timing decides how the lanes interleave; that part no seed reproduces).

The deployment: three KRaft brokers (replication factor 3, ``min.insync.replicas`` 2, no
unclean election), a Redis Cluster of three primaries with two replicas each
(``cluster-node-timeout`` 5 s), the consumer with ``CM_REDIS_REPLICA_ACKS``, the controller's
lease loop, and a few agents.

Faults come in *lanes*. A lane injects one fault at a time and heals it (its service whole
again) before the next; the lanes run at the same time. Each lane keeps to what its
service is documented to survive (docs/concepts/requests-and-ordering.md,
docs/concepts/epochs-and-fences.md; docs/howto/deploy-replicated.md):

- ``redis``: at most one primary down. A failover needs a majority of the primaries (two
  of three) to elect a replica, so a second primary lost before the first is replaced would
  leave slots without a primary for good. The next fault waits until all nine nodes run,
  three are primaries, and each has its two replicas in sync: a primary killed then always
  has a replica to promote, and the replication barrier a replica to confirm. The
  failover with a lost tail cuts off both replicas of one primary and kills that primary:
  that is one fault, the only one with three nodes away, and nothing else of Redis is
  faulted meanwhile.
- ``kafka``: at most one broker down or paused. With replication factor 3 and
  ``min.insync.replicas`` 2 one broker away loses no acknowledged record and blocks no
  write, and the other two keep the KRaft quorum; the next fault waits until every
  partition has all three brokers in sync again (two away would stop every write).
- ``processes``: one of the consumer, the controller or an agent SIGKILLed and started
  again (the consumer's replays are exactly once; a restarted controller grants full
  leases; an agent comes back as a new incarnation).
- ``membership``: the controller removes a replica (``replicas remove``) or adds one (a new
  agent, or a removed replica id again, which must get a higher epoch). Between
  ``MIN_AGENTS`` and ``MAX_AGENTS`` replicas stay.

Across lanes faults overlap freely: each service stays within what it tolerates while the
others are faulted, and every process waits out an outage of the others.

Every lane goes through all its kinds, in an order the seed shuffles, before it repeats
one: a run of a few minutes injects each kind at least once.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Iterator, Sequence
from typing import TypeVar

T = TypeVar("T")

# Kinds, one lane each.
CONSUMER_KILL = "consumer SIGKILL"
CONTROLLER_KILL = "controller SIGKILL"
AGENT_KILL = "agent SIGKILL"
BROKER_KILL = "broker SIGKILL"
BROKER_PAUSE = "broker SIGSTOP"
REDIS_PRIMARY_KILL = "Redis primary SIGKILL"
REDIS_NODE_PAUSE = "Redis node SIGSTOP"
REDIS_LOST_TAIL = "Redis failover losing the tail"
REPLICA_ADD = "replica added"
REPLICA_READD = "replica added again"
REPLICA_REMOVE = "replica removed"

REDIS, KAFKA, PROCESSES, MEMBERSHIP = "redis", "kafka", "processes", "membership"

LANES: dict[str, tuple[str, ...]] = {
    REDIS: (REDIS_PRIMARY_KILL, REDIS_NODE_PAUSE, REDIS_LOST_TAIL),
    KAFKA: (BROKER_KILL, BROKER_PAUSE),
    PROCESSES: (CONSUMER_KILL, CONTROLLER_KILL, AGENT_KILL),
}

# How long each kind lasts before it is healed, in seconds (low, high). A primary killed
# is restarted that long after a replica took its place; a node paused for longer than
# the cluster-node-timeout (5 s) is failed over; a broker paused past
# broker.session.timeout.ms (9 s) is fenced and its leaderships move; the lost tail is how
# long writes go on into the cut-off primary before it is killed.
HOLDS: dict[str, tuple[float, float]] = {
    CONSUMER_KILL: (0.0, 5.0),
    CONTROLLER_KILL: (0.0, 8.0),
    AGENT_KILL: (0.0, 8.0),
    BROKER_KILL: (1.0, 12.0),
    BROKER_PAUSE: (1.0, 14.0),
    REDIS_PRIMARY_KILL: (0.0, 8.0),
    REDIS_NODE_PAUSE: (1.0, 10.0),
    REDIS_LOST_TAIL: (1.0, 5.0),
}

# Quiet time after a fault healed, before the lane's next one (low, high), in seconds.
GAPS: dict[str, tuple[float, float]] = {
    REDIS: (2.0, 8.0),
    KAFKA: (3.0, 10.0),
    PROCESSES: (3.0, 10.0),
    MEMBERSHIP: (5.0, 15.0),
}

START_AGENTS, MIN_AGENTS, MAX_AGENTS = 3, 2, 4


@dataclasses.dataclass(frozen=True)
class Fault:
    """One fault of a lane, or one membership change.

    Attributes:
        kind: one of the kinds above.
        pick: which target: the harness takes ``candidates[pick % len(candidates)]`` of
            the candidates in a stable order (nodes by port, agents by id), so the seed,
            not the moment, chooses.
        hold_s: how long the fault lasts before it is healed (0 for a membership change).
        gap_s: quiet time after it, before the lane's next.
    """

    kind: str
    pick: int
    hold_s: float
    gap_s: float

    def target(self, candidates: Sequence[T]) -> T:
        """The chosen one of ``candidates`` (not empty), in the order given."""
        return candidates[self.pick % len(candidates)]


def faults(seed: int, lane: str) -> Iterator[Fault]:
    """The endless faults of ``lane`` (``REDIS``, ``KAFKA`` or ``PROCESSES``) for ``seed``;
    each round holds every kind of the lane once, in a shuffled order."""
    rng = random.Random(f"{seed}:{lane}")
    while True:
        kinds = list(LANES[lane])
        rng.shuffle(kinds)
        for kind in kinds:
            yield Fault(kind, rng.randrange(1 << 16), _uniform(rng, HOLDS[kind]), _gap(rng, lane))


def membership(seed: int) -> Iterator[Fault]:
    """The endless membership changes for ``seed``: removals and additions that keep the
    replicas between ``MIN_AGENTS`` and ``MAX_AGENTS``, counted from ``START_AGENTS``. An
    addition after a removal re-adds a removed id about half the time."""
    rng = random.Random(f"{seed}:{MEMBERSHIP}")
    count, removed = START_AGENTS, 0
    while True:
        if count >= MAX_AGENTS or (count > MIN_AGENTS and rng.random() < 0.5):
            kind, count, removed = REPLICA_REMOVE, count - 1, removed + 1
        elif removed and rng.random() < 0.5:
            kind, count, removed = REPLICA_READD, count + 1, removed - 1
        else:
            kind, count = REPLICA_ADD, count + 1
        yield Fault(kind, rng.randrange(1 << 16), 0.0, _gap(rng, MEMBERSHIP))


def _uniform(rng: random.Random, bounds: tuple[float, float]) -> float:
    # Tenths of a second: a schedule printed and read back is the same schedule.
    return round(rng.uniform(*bounds), 1)


def _gap(rng: random.Random, lane: str) -> float:
    return _uniform(rng, GAPS[lane])
