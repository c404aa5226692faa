"""The demo's verdict: Redis against what the surviving agents hold (pure, no I/O).

Per collection, the survivors' rows in Redis must equal, row for row and with the same
multiplicities, the rows their agents published and the broker acknowledged; and the
removed and the killed replica must have no row left.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping, Sequence

from collection_manager.core.specs import Row

# replica id -> collection -> rows (with multiplicities)
ReplicaRows = Mapping[str, Mapping[str, Counter[Row]]]


@dataclasses.dataclass(frozen=True)
class CollectionCheck:
    """One collection's line of the verdict.

    Attributes:
        collection: the collection.
        redis_rows: the survivors' rows in Redis.
        agent_rows: the rows the survivors' agents hold.
        same_rows: whether those are the same rows, not only as many.
        left: replica that must be gone -> its rows still in Redis.
    """

    collection: str
    redis_rows: int
    agent_rows: int
    same_rows: bool
    left: Mapping[str, int]

    @property
    def ok(self) -> bool:
        """Whether the collection is exactly as it must be."""
        return self.same_rows and not any(self.left.values())


@dataclasses.dataclass(frozen=True)
class Verification:
    """The verdict over every collection."""

    checks: Sequence[CollectionCheck]
    gone: Sequence[str]

    @property
    def ok(self) -> bool:
        """Whether every collection is exactly as it must be.

        The survivors must also hold some row: comparing nothing with nothing proves nothing.
        """
        held = any(check.agent_rows for check in self.checks)
        return held and all(check.ok for check in self.checks)


def _rows(rows: Mapping[str, Counter[Row]], collection: str) -> Counter[Row]:
    # A zero count is no row; a negative one is kept, so that it shows as a difference.
    return Counter({row: n for row, n in rows.get(collection, Counter()).items() if n})


def _size(rows: Counter[Row]) -> int:
    # Rows with their multiplicities; a negative one never cancels a positive one.
    return sum(abs(n) for n in rows.values())


def verify(stored: ReplicaRows, held: ReplicaRows, gone: Sequence[str]) -> Verification:
    """Compares Redis with the agents.

    Args:
        stored: replica -> collection -> its rows in Redis (survivors and ``gone``).
        held: survivor -> collection -> the rows its agent holds.
        gone: the replicas that must have no row left (removed, killed).
    """
    collections = sorted({c for rows in (*stored.values(), *held.values()) for c in rows})
    checks = []
    for collection in collections:
        in_redis = {r: _rows(stored.get(r, {}), collection) for r in held}
        in_agents = {r: _rows(rows, collection) for r, rows in held.items()}
        checks.append(
            CollectionCheck(
                collection=collection,
                redis_rows=sum(_size(rows) for rows in in_redis.values()),
                agent_rows=sum(_size(rows) for rows in in_agents.values()),
                same_rows=in_redis == in_agents,
                left={r: _size(_rows(stored.get(r, {}), collection)) for r in gone},
            )
        )
    return Verification(tuple(checks), tuple(gone))


SUMMARY_TITLE = "rows: survivors in Redis and in their agents; removed and killed in Redis"


def summary_table(verification: Verification) -> tuple[list[str], list[list[str]]]:
    """Headers and cells of the verdict, one line per collection (see ``SUMMARY_TITLE``)."""
    headers = ["collection", "Redis", "agents", "same", *verification.gone, "ok"]
    lines = [
        [
            check.collection,
            str(check.redis_rows),
            str(check.agent_rows),
            "yes" if check.same_rows else "NO",
            *(str(check.left.get(replica, 0)) for replica in verification.gone),
            "ok" if check.ok else "MISMATCH",
        ]
        for check in verification.checks
    ]
    return headers, lines
