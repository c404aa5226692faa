"""TTL index size vs primary size over time: ours (tight) vs an append-only index (seed 004).

A simulated fleet, one step per simulated second. ``--keys`` replicas join at the start,
``--churn`` of the live ones fall silent every step and as many new ones join (until two
thirds of the run; then the fleet only shrinks). Every live replica writes every
``--renew-every`` steps, and what it writes lives ``--ttl-s`` seconds:

- **one-to-one** (replica leases): the write is a heartbeat, ``put(replica, lease)``;
  ours is :class:`~collection_manager.core.expiry_indexes.OneToOneTtl`, the baseline
  :class:`~collection_manager.core.expiry_indexes.AppendOnlyTtlIndex` (an index entry per write);
- **one-to-many** (a replica's rows, each with its own TTL): the write appends
  ``--rows-per-write`` rows;
  ours is :class:`~collection_manager.core.expiry_indexes.OneToManyTtl` (one entry per key,
  its minimum expiry), the baseline :class:`AppendOnlyListTtl` below (an index entry per
  appended row, and cleanup walks the key's rows for each expired entry, as before
  SPARK-50302).

Both of a pair get the same operations, and ``expire(now)`` runs after every step. Each
step samples primary size (keys) and index size (entries) of all four, and the cleanup
work adds up. Pure: no services, no clock, deterministic for a given ``--seed``.
Run: ``.venv/bin/python -m bench.ttl_index [--keys 2000] [--steps 300]``.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import random
from typing import Any, Generic, TypeVar

from bench.common import report
from collection_manager.core.expiry_indexes import (
    AppendOnlyTtlIndex,
    OneToManyTtl,
    OneToOneTtl,
    expiry_for,
)

K = TypeVar("K")
E = TypeVar("E")
STEP_MS = 1_000


class AppendOnlyListTtl(Generic[K, E]):
    """BASELINE ONLY: list state whose expiry index gains an entry per appended element.

    Cleanup pops every expired entry and walks its key's elements each time, dropping the
    expired ones: a key with ``n`` elements of which ``d`` expire is walked ``d`` times.
    """

    def __init__(self) -> None:
        self._elements: dict[K, list[tuple[E, int]]] = {}
        self._index: list[tuple[int, int, K]] = []
        self._sequence = itertools.count()
        self.entries_examined = 0
        self.elements_examined = 0

    def append(self, key: K, element: E, now_ms: int, ttl_ms: int) -> None:
        """Append ``element`` to ``key`` and an index entry at its expiry."""
        expires_at = expiry_for(now_ms, ttl_ms)
        self._elements.setdefault(key, []).append((element, expires_at))
        heapq.heappush(self._index, (expires_at, next(self._sequence), key))

    def expire(self, now_ms: int) -> int:
        """Pop every index entry ``<= now_ms``, walking its key; return elements dropped."""
        dropped = 0
        while self._index:
            self.entries_examined += 1
            if self._index[0][0] > now_ms:
                break
            _, _, key = heapq.heappop(self._index)
            stored = self._elements.get(key)
            if stored is None:  # stale: an earlier walk emptied the key
                continue
            self.elements_examined += len(stored)
            kept = [(element, at) for element, at in stored if at > now_ms]
            dropped += len(stored) - len(kept)
            if kept:
                self._elements[key] = kept
            else:
                del self._elements[key]
        return dropped

    @property
    def index_size(self) -> int:
        """Entries in the index: one per appended element not yet popped."""
        return len(self._index)

    @property
    def primary_size(self) -> int:
        """Keys holding elements."""
        return len(self._elements)

    @property
    def element_count(self) -> int:
        """Elements held across all keys."""
        return sum(len(stored) for stored in self._elements.values())


class Fleet:
    """Which replicas are live, and when each writes next."""

    def __init__(self, keys: int, renew_every: int, seed: int) -> None:
        self.random = random.Random(seed)
        self.renew_every = renew_every
        self.next_id = itertools.count()
        self.live: dict[str, int] = {}  # replica -> the step phase it writes at
        self.join(keys)

    def join(self, count: int) -> None:
        """``count`` new replicas, spread over the write phases."""
        for _ in range(count):
            n = next(self.next_id)
            self.live[f"r{n}"] = n % self.renew_every

    def silence(self, count: int) -> None:
        """``count`` random live replicas stop writing (their state then expires)."""
        for replica in self.random.sample(sorted(self.live), min(count, len(self.live))):
            del self.live[replica]

    def writers(self, step: int) -> list[str]:
        """The replicas that write at ``step``."""
        phase = step % self.renew_every
        return [replica for replica, at in self.live.items() if at == phase]


def _sizes(state: Any) -> dict[str, int]:
    return {"primary": state.primary_size, "index": state.index_size}


def parser() -> argparse.ArgumentParser:
    """The simulation's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--keys", type=int, default=2_000, help="replicas at the start")
    parser.add_argument("--steps", type=int, default=300, help="simulated seconds")
    parser.add_argument("--ttl-s", type=int, default=30, help="lease and row time to live")
    parser.add_argument("--renew-every", type=int, default=5, help="seconds between writes")
    parser.add_argument("--rows-per-write", type=int, default=4, help="one-to-many rows")
    parser.add_argument("--churn", type=float, default=0.005, help="share silenced per step")
    parser.add_argument("--seed", type=int, default=1)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """Samples of primary and index sizes per step, and the cleanup work of each state."""
    fleet = Fleet(args.keys, args.renew_every, args.seed)
    leases: OneToOneTtl[str, int] = OneToOneTtl()
    lease_baseline: AppendOnlyTtlIndex[str, int] = AppendOnlyTtlIndex()
    rows: OneToManyTtl[str, int] = OneToManyTtl()
    rows_baseline: AppendOnlyListTtl[str, int] = AppendOnlyListTtl()
    work = dict.fromkeys(("one_to_one", "one_to_one_baseline"), 0)
    work |= dict.fromkeys(("one_to_many", "one_to_many_baseline"), 0)
    samples = []
    ttl_ms = args.ttl_s * STEP_MS
    for step in range(args.steps):
        now = step * STEP_MS
        for replica in fleet.writers(step):
            for lease_state in (leases, lease_baseline):
                lease_state.put(replica, step, now, ttl_ms)
            for row in range(args.rows_per_write):
                rows.append(replica, row, now, ttl_ms)
                rows_baseline.append(replica, row, now, ttl_ms)
        churned = round(len(fleet.live) * args.churn)
        fleet.silence(churned)
        if step < args.steps * 2 // 3:
            fleet.join(churned)
        for name, lease_state in (("one_to_one", leases), ("one_to_one_baseline", lease_baseline)):
            lease_state.expire(now)
            work[name] += lease_state.last_cleanup.index_entries_examined
        rows.expire(now)
        work["one_to_many"] += rows.last_cleanup.elements_examined
        rows_baseline.expire(now)
        samples.append(
            {
                "t_s": step,
                "live": len(fleet.live),
                "one_to_one": _sizes(leases),
                "one_to_one_baseline": _sizes(lease_baseline),
                "one_to_many": {**_sizes(rows), "elements": rows.element_count},
                "one_to_many_baseline": {
                    **_sizes(rows_baseline),
                    "elements": rows_baseline.element_count,
                },
            }
        )
    work["one_to_many_baseline"] = rows_baseline.elements_examined
    return {
        "samples": samples,
        # one-to-one: index entries read by cleanup; one-to-many: elements walked by it.
        "cleanup_work": work,
        "peak_index_per_key": {name: peak_index_per_key(samples, name) for name in work},
    }


def peak_index_per_key(samples: list[dict[str, Any]], name: str) -> float:
    """The largest ratio of index entries to primary keys over the samples of ``name``."""
    ratios = [s[name]["index"] / s[name]["primary"] for s in samples if s[name]["primary"]]
    return max(ratios, default=0.0)


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    peak, work = result["peak_index_per_key"], result["cleanup_work"]
    rows = [
        (kind, peak[kind], peak[f"{kind}_baseline"], work[kind], work[f"{kind}_baseline"])
        for kind in ("one_to_one", "one_to_many")
    ]
    report(
        "ttl_index",
        [
            "state",
            "peak index entries per key",
            "append-only (baseline)",
            "cleanup work",
            "append-only cleanup work (baseline)",
        ],
        rows,
        {"settings": vars(args), "samples": result["samples"]},
    )


if __name__ == "__main__":
    main()
