"""The verdict of a chaos run, once every fault healed: Redis against the model of every
request in the topic (``tests/model/model.py``), against what every live
agent holds, and every epoch the topic announces issued once per replica id.

It counts mismatches instead of stopping at the first, so that a soak reports them all.
"""

from __future__ import annotations

import dataclasses
from collections import Counter, defaultdict
from collections.abc import Collection, Mapping, Sequence
from itertools import pairwise
from pathlib import Path

from collection_manager.core.filters import eq
from collection_manager.core.requests import Append, Delete, ReplicaAdded, Request
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.storage.client import redis_client
from collection_manager.storage.progress import ProgressRecord
from collection_manager.storage.store import RedisStore
from producers.agent import load_state
from tests.integration.workload import partitions_in_order
from tests.model.model import ModelStore
from tests.support import assert_eventually

CATCH_UP_TIMEOUT_S = 600.0
EXAMPLES = 10  # mismatches described in full; the rest only counted


@dataclasses.dataclass(frozen=True)
class LateRemoval:
    """A fenced delete applied after an append of a newer epoch of its replica: its unit
    fences its epoch already, so it must retract nothing (issue 42, test_late_removal.py)."""

    offset: int
    collection: str
    replica_id: str
    fenced: int  # the epoch it removes
    appended: int  # the newer epoch whose rows it must leave

    def __str__(self) -> str:
        return (
            f"offset {self.offset}: {self.collection}: delete fenced at epoch {self.fenced} "
            f"of {self.replica_id} after appends of its epoch {self.appended}"
        )


@dataclasses.dataclass
class Verdict:
    """What was compared, and every mismatch by kind (none is the only good outcome)."""

    requests: int = 0  # requests of the topic the model applied
    rows: int = 0  # rows of the model compared with Redis
    agents: int = 0  # live agents compared with Redis
    agent_rows: int = 0  # rows those agents hold
    removed: int = 0  # removed replicas checked for rows left behind
    epochs: int = 0  # ReplicaAdded epochs checked
    mismatches: Counter[str] = dataclasses.field(default_factory=Counter)
    examples: list[str] = dataclasses.field(default_factory=list)
    # Removals of an older incarnation applied after a newer one appended (the race of
    # test_late_removal.py): shown, as they must have retracted nothing; a live agent's
    # rows they retracted would be counted as rows differing from the agent's.
    late_removals: list[LateRemoval] = dataclasses.field(default_factory=list)

    @property
    def total(self) -> int:
        return sum(self.mismatches.values())

    def mismatch(self, kind: str, count: int, example: str) -> None:
        if count:
            self.mismatches[kind] += count
            if len(self.examples) < EXAMPLES:
                self.examples.append(f"{kind}: {example}")

    def lines(self) -> list[str]:
        return [
            f"compared: {self.requests} requests of the topic in the model, {self.rows} rows; "
            f"{self.agents} live agents holding {self.agent_rows} rows; {self.removed} removed "
            f"replicas; {self.epochs} epochs announced",
            f"mismatches: {self.total}"
            + "".join(f"\n  {kind}: {n}" for kind, n in sorted(self.mismatches.items())),
            *(f"  e.g. {example}" for example in self.examples),
            f"removals applied after a newer incarnation appended: {len(self.late_removals)}"
            " (the race of test_late_removal.py: each must retract nothing)",
            *(f"  {late}" for late in self.late_removals[:EXAMPLES]),
        ]


def judge(
    kafka: str,
    topic: str,
    redis_url: str,
    specs: Sequence[CollectionSpec],
    quiet: Collection[str],
    fleet: Sequence[CollectionSpec],
    live: Mapping[str, tuple[Path, int]],
    removed: Collection[str],
) -> Verdict:
    """Reads the topic, waits until the consumer counts all of it done, and compares.

    Args:
        specs: every collection the topic writes.
        quiet: those no request changes any more: their counters are compared too (the
            others still get the agents' TTL refreshes, which change no contents).
        fleet: the agents' collections.
        live: replica id -> the state file and epoch of its running agent.
        removed: replica ids removed for good: none of their rows may be left.
    """
    partitions = partitions_in_order(kafka, topic)
    _wait_applied(redis_url, topic, {p: r[-1][0] for p, r in partitions.items() if r})
    requests = [request for found in partitions.values() for _, request in found]
    late = [late for found in partitions.values() for late in _late_removals(found)]
    store = RedisStore.connect(redis_url)
    verdict = Verdict(requests=len(requests), late_removals=late)
    _against_the_model(verdict, store, requests, specs, quiet)
    _against_the_agents(verdict, store, fleet, live, removed)
    _epochs_once(verdict, requests)
    return verdict


def _wait_applied(redis_url: str, topic: str, last: Mapping[int, int]) -> None:
    """Until the consumer's progress record counts every offset in ``last`` as done."""
    record = ProgressRecord(redis_client(redis_url), topic)

    def done() -> None:
        offsets = record.read().offsets
        behind = {p: (offsets.get(p, -1), o) for p, o in last.items() if offsets.get(p, -1) < o}
        assert not behind, f"progress behind the topic (done, last): {behind}"

    assert_eventually(done, CATCH_UP_TIMEOUT_S, 1.0)


def _differing(stored: Mapping[Row, int], expected: Mapping[Row, int]) -> int:
    """Rows whose multiplicities differ (a row missing on one side counts once)."""
    kept = {row: n for row, n in expected.items() if n}
    return len(set(stored.items()) ^ set(kept.items()))


def _against_the_model(
    verdict: Verdict,
    store: RedisStore,
    requests: Sequence[Request],
    specs: Sequence[CollectionSpec],
    quiet: Collection[str],
) -> None:
    model = ModelStore(specs)
    model.apply_all(requests)
    for spec in specs:
        expected = model.collection(spec.name)
        rows = expected.snapshot()[0]
        verdict.rows += len(rows)
        stored = store.snapshot(spec.name).rows
        differing = _differing(stored, rows)
        verdict.mismatch(
            "rows differing from the model",
            differing,
            f"{spec.name}: {differing} of {len(rows)} rows",
        )
        if spec.name in quiet:
            counters = store.stats(spec.name)  # a counter never moved is absent
            got = (counters.get("requests", 0), counters.get("retractions", 0))
            want = (expected.counters.requests, expected.counters.retractions)
            verdict.mismatch(
                "counters differing from the model",
                int(got != want),
                f"{spec.name}: (requests, retractions) stored {got}, model {want}",
            )


def _against_the_agents(
    verdict: Verdict,
    store: RedisStore,
    fleet: Sequence[CollectionSpec],
    live: Mapping[str, tuple[Path, int]],
    removed: Collection[str],
) -> None:
    for replica_id, (state_file, _epoch) in sorted(live.items()):
        held = load_state(state_file)
        verdict.agents += 1
        for spec in fleet:
            mine = held.get(spec.name, Counter())
            verdict.agent_rows += sum(1 for n in mine.values() if n)
            stored = store.snapshot(spec.name, eq("replica_id", replica_id)).rows
            differing = _differing(stored, mine)
            verdict.mismatch(
                "rows differing from a live agent's",
                differing,
                f"{spec.name}, replica {replica_id}: {differing} rows",
            )
    for replica_id in sorted(removed):
        verdict.removed += 1
        for spec in fleet:
            left = len(store.snapshot(spec.name, eq("replica_id", replica_id)).rows)
            verdict.mismatch(
                "rows of a removed replica left", left, f"{spec.name}, replica {replica_id}"
            )


def _epochs_once(verdict: Verdict, requests: Sequence[Request]) -> None:
    """Every ReplicaAdded of a replica (one partition, its key) has an epoch above the one
    before: no epoch handed to two incarnations (docs/concepts/epochs-and-fences.md)."""
    added: dict[str, list[int]] = defaultdict(list)
    for request in requests:
        if isinstance(request, ReplicaAdded):
            added[request.replica_id].append(request.epoch)
    for replica_id, epochs in sorted(added.items()):
        verdict.epochs += len(epochs)
        twice = len(epochs) - len(set(epochs))
        verdict.mismatch("epochs issued twice", twice, f"replica {replica_id}: {epochs}")
        downward = sum(later <= earlier for earlier, later in pairwise(epochs))
        verdict.mismatch(
            "epochs not above the one before", max(0, downward - twice), f"{replica_id}: {epochs}"
        )


def _late_removals(partition: Sequence[tuple[int, Request]]) -> list[LateRemoval]:
    """The fenced deletes of ``partition`` that follow, in its order, an append of a newer
    epoch of their replica to their collection."""
    newest: dict[tuple[str, str], int] = {}
    late = []
    for offset, request in partition:
        if isinstance(request, Append):
            key = (request.collection, request.replica_id)
            newest[key] = max(newest.get(key, 0), request.epoch)
        elif isinstance(request, Delete) and request.fence is not None:
            fence = request.fence
            appended = newest.get((request.collection, fence.replica_id), 0)
            if appended > fence.epoch:
                late.append(
                    LateRemoval(offset, request.collection, fence.replica_id, fence.epoch, appended)
                )
    return late
