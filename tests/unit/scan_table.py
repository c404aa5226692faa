"""Redis's hash table as SCAN sees it, in memory: what the read must survive.

A model of dict.c (Redis 7.0): ``2**m`` buckets, an element in bucket ``hash & mask``,
chains with new entries first; growth to the next power of two above the count when the
table is full, a shrink to the next power of two at or above it when a delete leaves it
under a tenth full; both rehashed incrementally, one bucket per add, delete or lookup (up
to ten empty ones visited). ``scan`` is ``dictScan`` in HSCAN's loop: the reverse-binary
cursor, both tables while rehashing, at most eleven calls for one element asked for. So a scan
over this table returns an element twice exactly when Redis's would: after a shrink.
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Hashable

INITIAL = 4
MIN_FILL_PERCENT = 10
_WORD = (1 << 64) - 1


def _rev(v: int) -> int:
    return int(f"{v & _WORD:064b}"[::-1], 2)


def _next_power(size: int) -> int:
    power = INITIAL
    while power < size:
        power *= 2
    return power


@dataclasses.dataclass
class Table:
    """The buckets of one hash table (and, while rehashing, of the one it moves to)."""

    seed: int
    tables: list[list[list[Hashable]]] = dataclasses.field(default_factory=list)
    rehash_index: int = -1  # the next bucket of tables[0] to move; -1: not rehashing
    _hashes: dict[Hashable, int] = dataclasses.field(default_factory=dict)

    def hash(self, element: Hashable) -> int:
        if element not in self._hashes:
            self._hashes[element] = random.Random(f"{self.seed}:{element!r}").getrandbits(64)
        return self._hashes[element]

    @property
    def rehashing(self) -> bool:
        return self.rehash_index >= 0

    def __len__(self) -> int:
        return sum(len(chain) for table in self.tables for chain in table)

    def slots(self) -> int:
        return sum(len(table) for table in self.tables)

    def __contains__(self, element: Hashable) -> bool:
        return any(element in t[self.hash(element) & (len(t) - 1)] for t in self.tables)

    def add(self, element: Hashable) -> None:
        self._rehash_step()
        if element in self:
            return
        if not self.tables:
            self.tables = [[[] for _ in range(INITIAL)]]
        elif not self.rehashing and len(self) >= len(self.tables[0]):
            self._resize(_next_power(len(self) + 1))
        table = self.tables[-1]  # the new one while rehashing
        table[self.hash(element) & (len(table) - 1)].insert(0, element)

    def delete(self, element: Hashable) -> None:
        self._rehash_step()
        for table in self.tables:
            chain = table[self.hash(element) & (len(table) - 1)]
            if element in chain:
                chain.remove(element)
                break
        slots, used = self.slots(), len(self)
        if slots > INITIAL and used * 100 // slots < MIN_FILL_PERCENT and not self.rehashing:
            size = _next_power(max(used, INITIAL))
            if size != len(self.tables[0]):
                self._resize(size)

    def find(self, element: Hashable) -> bool:
        self._rehash_step()
        return element in self

    def _resize(self, size: int) -> None:
        self.tables.append([[] for _ in range(size)])
        self.rehash_index = 0

    def _rehash_step(self) -> None:
        if not self.rehashing:
            return
        old, new = self.tables
        if not any(old):  # deletes emptied it
            self.tables, self.rehash_index = [new], -1
            return
        empty_visits = 10
        while not old[self.rehash_index]:
            self.rehash_index += 1
            empty_visits -= 1
            if empty_visits == 0:
                return
        for element in reversed(old[self.rehash_index]):
            new[self.hash(element) & (len(new) - 1)].insert(0, element)
        old[self.rehash_index] = []
        self.rehash_index += 1
        if not any(old):
            self.tables, self.rehash_index = [new], -1

    def _dict_scan(self, v: int, found: list[Hashable]) -> int:
        if not self.tables:
            return 0
        if not self.rehashing:
            t0 = self.tables[0]
            m0 = len(t0) - 1
            found.extend(t0[v & m0])
            v |= ~m0 & _WORD
            return _rev(_rev(v) + 1)
        t0, t1 = sorted(self.tables, key=len)
        m0, m1 = len(t0) - 1, len(t1) - 1
        found.extend(t0[v & m0])
        while True:
            found.extend(t1[v & m1])
            v |= ~m1 & _WORD
            v = _rev(_rev(v) + 1)
            if not v & (m0 ^ m1):
                return v

    def scan(self, cursor: int, count: int) -> tuple[int, list[Hashable]]:
        """HSCAN ``cursor`` COUNT ``count``: the next cursor (0: done) and what it found."""
        found: list[Hashable] = []
        iterations = count * 10  # t_db.c: while (cursor && maxiterations-- && found < count)
        while True:
            cursor = self._dict_scan(cursor, found)
            if not cursor or iterations == 0:
                return cursor, found
            iterations -= 1
            if len(found) >= count:
                return cursor, found
