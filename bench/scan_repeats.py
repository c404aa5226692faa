"""What leaving out SCAN's repeats costs a streamed read (issue 56, decision 0013), against
the same run's baseline: the read as it was, which checked nothing.

On a Redis given by URL (best a ``redis-server`` of its own), it loads ``--rows`` rows
(``bench/http_reads.py``'s ``load_rows``), then streams them whole with ``stream_rows``
(the storage side of NDJSON and Arrow, no HTTP) four ways, the first three ``--repeat``
times each, taking turns:

- ``baseline``: steps that say nothing of their order, and 8-byte fingerprints, as before;
- ``shipped``: as shipped (the step's probe, the stretches, 16-byte fingerprints of the
  encodings Redis sent);
- ``repr fingerprints``: as shipped but for the fingerprints, of each row's ``repr`` as
  before b1a73c6 (issue 51: the Arrow read's CPU);
- ``through a shrink``: as shipped, with 95% of the rows deleted after the tenth step, so
  that steps name stretches they may have scanned again and are checked.

It prints the figures (µs per row read, rows per second, the best of the repeats) and the
load average; a row stored costs nothing more (no key, field or write was added).

    .venv/bin/python -m bench.scan_repeats redis://127.0.0.1:6399/3 --rows 1000000
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import os
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import redis

from bench.http_reads import COLLECTION, load_rows
from collection_manager.core.filters import in_, not_
from collection_manager.core.requests import Delete
from collection_manager.core.specs import Row
from collection_manager.core.stepped_read import ScanStep, Span
from collection_manager.storage import streamed
from collection_manager.storage.client import redis_client
from collection_manager.storage.step_reads import RedisStepReads
from collection_manager.storage.store import RedisStore


class _Unordered(RedisStepReads):
    """The steps as before: no stretch named, so nothing is checked."""

    def scan(self, cursor: object | None) -> ScanStep[Row]:
        step = super().scan(cursor)
        return dataclasses.replace(step, covers=None, again=None)


class _PlainEmitted(streamed.SpilledEmitted):
    """The record as before: 8-byte fingerprints, asked about only at the end."""

    def add(self, rows: Iterable[Row], covers: Span | None) -> None:
        prints = [hash(repr(row)).to_bytes(8, "little", signed=True) for row in rows]
        self._file.write(b"".join(prints))
        self.count += len(prints)


class _NoEncodings(RedisStepReads):
    """The steps as shipped, without keeping the encodings Redis sent."""

    def keep_encodings(self) -> dict[Row, bytes]:
        return {}


class _ReprEmitted(streamed.SpilledEmitted):
    """The record before b1a73c6: fingerprints of each row's ``repr``."""

    def __init__(self, _encoding: Callable[[Row], bytes]) -> None:
        super().__init__(lambda row: repr(row).encode())


def _read(client: redis.Redis, between: Callable[[int], None] = lambda _: None) -> int:
    stream = streamed.stream_rows(client, client_spec(client), None, None)
    rows = 0
    for number, step in enumerate(stream.steps):
        rows += len(step)
        between(number)
    return rows


def client_spec(client: redis.Redis) -> Any:
    return RedisStore(client).spec(COLLECTION)


@dataclasses.dataclass
class _Patched:
    """Swaps the stream's step reads and record for others (the baseline's), while open."""

    reads: type[RedisStepReads] = _Unordered
    emitted: type[streamed.SpilledEmitted] = _PlainEmitted

    def __enter__(self) -> None:
        self._reads, self._emitted = streamed.RedisStepReads, streamed.SpilledEmitted
        streamed.RedisStepReads = self.reads  # type: ignore[misc]
        streamed.SpilledEmitted = self.emitted  # type: ignore[misc]

    def __exit__(self, *_: object) -> None:
        streamed.RedisStepReads = self._reads  # type: ignore[misc]
        streamed.SpilledEmitted = self._emitted  # type: ignore[misc]


def _timed(read: Callable[[], int], repeat: int) -> Iterator[tuple[float, int]]:
    for _ in range(repeat):
        started = time.perf_counter()
        rows = read()
        yield time.perf_counter() - started, rows


def _figure(name: str, runs: list[tuple[float, int]]) -> None:
    seconds, rows = min(runs)
    print(f"{name}: {rows} rows in {seconds:.2f} s, {seconds / rows * 1e6:.2f} µs a row")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("redis_url")
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    client = redis_client(args.redis_url)
    store = RedisStore(client)
    print(f"load average before: {os.getloadavg()}")
    print(f"loaded {args.rows} rows in {load_rows(store, args.rows):.1f} s", flush=True)
    # Interleaved, so that a neighbour's load falls on both alike.
    baseline: list[tuple[float, int]] = []
    shipped: list[tuple[float, int]] = []
    by_repr: list[tuple[float, int]] = []
    for _ in range(args.repeat):
        with _Patched():
            baseline += _timed(lambda: _read(client), 1)
        shipped += _timed(lambda: _read(client), 1)
        with _Patched(_NoEncodings, _ReprEmitted):
            by_repr += _timed(lambda: _read(client), 1)
    _figure("baseline", baseline)
    _figure("shipped", shipped)
    _figure("repr fingerprints", by_repr)
    offsets = itertools.count(10**9)

    def delete_most(step: int) -> None:
        if step == 10:  # the rows of all but 50 of the replicas: 95%
            kept = in_("replica_id", [f"r{i}" for i in range(args.rows // 20_000)])
            delete = Delete(COLLECTION, not_(kept))
            store.apply_requests("bench-scan", 0, [(next(offsets), delete)])
            store.finish_deletes()

    _figure("through a shrink", list(_timed(lambda: _read(client, delete_most), 1)))
    print(f"load average after: {os.getloadavg()}")


if __name__ == "__main__":
    main()
