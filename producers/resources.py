"""The agent process's own resource usage as the ``replica_metrics`` source.

One row ``(cpu, memory)``: CPU use in cores over the last interval (1.0 = one core busy
all the time, as in ``schemas/rows/replica_metrics.avsc``) and resident memory in bytes.
Each sample that differs from the last retracts the old row and inserts the new one, so
the collection always holds exactly one row per replica. Stdlib only: ``resource`` for CPU
time and ``/proc/self/stat`` for the resident set (``resource``'s peak RSS where there is
no ``/proc``).
"""

from __future__ import annotations

import dataclasses
import logging
import os
import resource
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from producers.simulated import Row, Update

logger = logging.getLogger(__name__)

REPLICA_METRICS = "replica_metrics"
COLUMNS = (("cpu", "double"), ("memory", "long"))

_PROC_STAT = Path("/proc/self/stat")
# Field 24 of /proc/<pid>/stat (1-based) is the resident set in pages; fields are counted
# after the ")" closing the command name, which may itself contain spaces and parentheses.
_RSS_FIELD_AFTER_COMM = 24 - 3


@dataclasses.dataclass(frozen=True)
class Sample:
    """One reading of the process's counters.

    Attributes:
        wall_s: monotonic clock, seconds.
        cpu_s: user + system CPU time of the process so far, seconds.
        rss_bytes: resident memory, bytes.
    """

    wall_s: float
    cpu_s: float
    rss_bytes: int


def parse_rss_bytes(stat_line: str, page_size: int) -> int:
    """Resident memory from the text of ``/proc/<pid>/stat``."""
    fields = stat_line[stat_line.rindex(")") + 2 :].split()
    return int(fields[_RSS_FIELD_AFTER_COMM]) * page_size


def rss_bytes() -> int:
    """The process's current resident memory in bytes."""
    try:
        return parse_rss_bytes(_PROC_STAT.read_text(), os.sysconf("SC_PAGE_SIZE"))
    except (OSError, ValueError, IndexError):
        # No procfs (macOS): the peak RSS is the closest stdlib figure (KiB on Linux/BSD).
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def sample() -> Sample:
    """Reads the process's CPU time and resident memory now."""
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return Sample(time.monotonic(), usage.ru_utime + usage.ru_stime, rss_bytes())


def metrics_row(previous: Sample, current: Sample) -> Row:
    """The ``(cpu, memory)`` row for the interval between two samples.

    CPU is rounded to a thousandth of a core so that idle intervals produce equal rows (and
    so no update) instead of noise.
    """
    elapsed = current.wall_s - previous.wall_s
    busy = current.cpu_s - previous.cpu_s
    cpu = round(busy / elapsed, 3) if elapsed > 0 else 0.0
    return (cpu, current.rss_bytes)


class ResourceSource:
    """The ``replica_metrics`` source of this process.

    Args:
        read: takes a sample; tests pass a scripted one.
    """

    def __init__(self, read: Callable[[], Sample] = sample) -> None:
        self._read = read
        self._last = read()
        self._row: Row | None = None

    def snapshot(self) -> dict[str, list[Update]]:
        """Samples now and returns the one-row state as an insertion.

        The first row's CPU covers the time since the source was created. Calling it again
        restarts the stream (the previous row is forgotten, not retracted).
        """
        self._row = self._advance()
        return {REPLICA_METRICS: [(self._row, 1)]}

    def step(self) -> dict[str, list[Update]]:
        """Samples now; retracts the old row and inserts the new one if they differ."""
        new = self._advance()
        old, self._row = self._row, new
        if old == new:
            return {REPLICA_METRICS: []}
        updates: list[Update] = [(new, 1)] if old is None else [(old, -1), (new, 1)]
        return {REPLICA_METRICS: updates}

    def state(self) -> dict[str, Counter[Row]]:
        """The consolidated state: the last row emitted (none before the snapshot)."""
        return {REPLICA_METRICS: Counter([] if self._row is None else [self._row])}

    def _advance(self) -> Row:
        current = self._read()
        row = metrics_row(self._last, current)
        self._last = current
        return row
