"""Which cores each process kind of a benchmark runs on, and pinning processes there.

The pure part derives the core counts a curve is measured at from the cores this process
may run on (``os.sched_getaffinity``), and, for one count, the layout: the consumer on
the first cores, Redis's primaries, the Kafka broker and the load generator on the rest,
apart from the consumer where the machine has cores left, else sharing the consumer's.

``pin_tree`` is the one place a benchmark pins a process: every thread of the process and
of its descendants (a JVM's threads, Spark's Python workers), as ``taskset -a -p`` does. A
thread or child started afterwards inherits its parent thread's cores.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path


def core_counts(available: int) -> list[int]:
    """The consumer's core counts for a machine of ``available`` cores: 1, 2, 4, 8, ...
    up to and including the machine's own (a count that is not a power of two too)."""
    if available < 1:
        raise ValueError(f"no cores available ({available})")
    counts, count = [], 1
    while count < available:
        counts.append(count)
        count *= 2
    return [*counts, available]


def _span(cores: Sequence[int]) -> str:
    return ",".join(str(core) for core in cores)


@dataclasses.dataclass(frozen=True)
class Layout:
    """The cores of each process kind for one core count of the consumer."""

    consumer: tuple[int, ...]
    redis: tuple[int, ...]
    kafka: tuple[int, ...]  # the broker and the load generator (this benchmark's process)

    @property
    def shared(self) -> bool:
        """Whether the services run on any of the consumer's cores."""
        return bool(set(self.consumer) & (set(self.redis) | set(self.kafka)))

    def describe(self) -> str:
        """One line: which kind runs where, and what shares a core."""
        consumer = f"consumer (Spark driver, JVM, Python workers) on CPU {_span(self.consumer)}"
        if self.redis == self.kafka:
            where = _span(self.redis)
            services = f"Redis primaries, Kafka broker and load generator on CPU {where}"
        else:
            services = (
                f"Redis primaries on CPU {_span(self.redis)}, Kafka broker and load generator "
                f"on CPU {_span(self.kafka)}"
            )
        shared = sorted(set(self.consumer) & (set(self.redis) | set(self.kafka)))
        note = f" (sharing CPU {_span(shared)} with the consumer)" if shared else ""
        return f"{consumer}; {services}{note}"


def layout(cores: int, allowed: Iterable[int]) -> Layout:
    """The consumer on the first ``cores`` of ``allowed``; the rest split between Redis
    (the first half, at least one) and the broker with the load generator, or all three on
    the one core left, or, with none left, on every allowed core (sharing the consumer's)."""
    ordered = sorted(allowed)
    if not 1 <= cores <= len(ordered):
        raise ValueError(f"{cores} cores asked for, {len(ordered)} allowed")
    consumer, rest = tuple(ordered[:cores]), tuple(ordered[cores:])
    if not rest:
        return Layout(consumer, tuple(ordered), tuple(ordered))
    if len(rest) == 1:
        return Layout(consumer, rest, rest)
    half = len(rest) // 2
    return Layout(consumer, rest[:half], rest[half:])


def allowed_cores() -> tuple[int, ...]:
    """The cores this process may run on."""
    return tuple(sorted(os.sched_getaffinity(0)))


# --- pinning (I/O) ----------------------------------------------------------------------------


def _children() -> dict[int, list[int]]:
    found: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat[stat.rindex(")") + 2 :].split()[1])
        found.setdefault(parent, []).append(int(entry.name))
    return found


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, from ``/proc``."""
    children, out, todo = _children(), [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo += children.get(current, [])
    return out


def pin_tree(pid: int, cores: Iterable[int], below: bool = True) -> int:
    """Pins every thread of ``pid`` and (``below``) of its descendants to ``cores``; returns
    how many threads were pinned (one that exited meanwhile is skipped)."""
    chosen, pinned = set(cores), 0
    for process in descendants(pid) if below else [pid]:
        try:
            threads = [int(t.name) for t in Path(f"/proc/{process}/task").iterdir()]
        except OSError:
            continue
        for thread in threads:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.sched_setaffinity(thread, chosen)
                pinned += 1
    return pinned


@contextlib.contextmanager
def pinned(trees: Iterable[int], cores: Iterable[int], alone: Iterable[int] = ()) -> Iterator[None]:
    """The trees of ``trees`` and the processes ``alone`` (their children left where they
    are) pinned to ``cores`` while inside, and back on the cores each had before after (the
    services may be shared with other runs)."""
    chosen = tuple(cores)
    roots = [(pid, True) for pid in trees] + [(pid, False) for pid in alone]
    before = [(pid, below, os.sched_getaffinity(pid)) for pid, below in roots]
    for pid, below, _ in before:
        pin_tree(pid, chosen, below)
    try:
        yield
    finally:
        for pid, below, cores_before in before:
            with contextlib.suppress(ProcessLookupError):
                pin_tree(pid, cores_before, below)
