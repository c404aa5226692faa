"""Reads over HTTP (``collection-manager serve``) against the command line and the store,
and the change feed against Redis itself (issue 43).

Everything runs in one run, on one Redis (a database of its own, ``--db``, emptied at the
end) and, for the feed only, one Kafka broker and the real consumer:

1. **Rows.** A collection of ``--rows`` rows (replicas of 1,000 rows, index on
   ``replica_id``, applied by the store as the consumer applies them) is read whole from a
   ``serve`` process as Arrow (``Accept: application/vnd.apache.arrow.stream``) and as
   NDJSON, ``--repeats`` times each in turn, and once by ``collection-manager query NAME
   --format json``, a process whose output goes to a pipe this process reads (the
   baseline). JSON is asked for too: the server refuses more than ``CM_HTTP_MAX_ROWS``
   rows (422), so JSON, NDJSON, Arrow and ``query --limit`` are also timed at that many
   rows (``limit``). Each read is timed from the request (the process's start) to its last
   byte, and its rows are counted after (a fast wrong answer fails the run); the server's
   CPU seconds (``/proc/PID/stat``) and ``query``'s (``wait4``) are kept beside. The
   server's peak resident set is the kernel's own high-water mark (``VmHWM`` in
   ``/proc/PID/status``), reset before each read by writing 5 to ``/proc/PID/clear_refs``,
   checked against ``VmRSS`` sampled every 10 ms; ``query``'s is its ``ru_maxrss``. The
   server's resident set after each read shows whether reads leave memory behind. Before
   all that, the server's first two Arrow answers (``limit`` rows) are timed: pyarrow
   imports pandas at its first ``pa.array``.
2. **Point queries.** ``--clients`` clients (threads in ``--client-processes``
   processes, a keep-alive connection each) ask the server in a closed loop for one
   replica's rows (``where=replica_id=rN``, the indexed column, ``limit`` ``--limit``),
   for ``--point-s`` seconds after a second of warm-up: p50 and p99 of each answer's time
   and answers per second. Twice: with the server's default bound of answers at once
   (``CM_HTTP_MAX_REQUESTS``, 16: the rest are refused with 503 and ``Retry-After: 1``,
   which the clients honour, counted apart), then with a bound of one per client. The
   baseline is the same read in the same clients without HTTP: ``RedisStore`` in the
   client processes (a store per read, its ``spec``, the ``where`` parsed, then
   ``stepped_snapshot`` with the limit: what the server does for it), on a connection
   pool per process. CPU per read: the server's, and the client processes' own.
3. **The change feed.** The real consumer (``collection-manager consume``, its default
   trigger) applies ``--feed-rate`` requests per second for ``--feed-s`` seconds, each
   appending one unique row, produced to a fresh topic. One client follows the
   collection's ``/changes`` stream; a thread asks Redis every 10 ms (``HEXISTS`` of each
   pending row, as ``bench.e2e``'s watcher does) whether it is visible. Per request:
   produce to the change on the SSE client, and produce to visible in Redis (the
   baseline), from the same produce time.

The figures come from a machine that is shared with other work: timings are noisy.
Run: ``.venv/bin/python -m bench.http_reads [--rows 1000000] [--clients 50]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import http.client
import json
import multiprocessing
import os
import random
import re
import select
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any, cast

import pyarrow as pa
import redis

from bench.common import report, services
from bench.e2e import scratch_topic
from bench.http_figures import http_reads
from bench.reader_load import CALL_TIMEOUT_S
from bench.report import number, ratio
from bench.store_apply import ROW_SCHEMA
from collection_manager.config import HttpConfig
from collection_manager.core.requests import Append
from collection_manager.core.specs import CollectionSpec, Row
from collection_manager.devservices import Endpoints
from collection_manager.http.negotiation import ARROW, EVENT_STREAM, JSON, NDJSON
from collection_manager.kafka.producer import KafkaProducer, ProducerConfig
from collection_manager.reading.where import parse_where
from collection_manager.storage.client import redis_client
from collection_manager.storage.keys import CollectionKeys
from collection_manager.storage.rows import encode_row
from collection_manager.storage.store import RedisStore
from schemas.codec import encode_request

COLLECTION = "bench-http-rows"
FEED_COLLECTION = "bench-http-feed"
REPLICA_ROWS = 1_000  # rows per replica: what ``where=replica_id=rN`` matches
APPENDS_PER_CALL = 20
LANES = 2  # threads loading the collection, one partition each
MB = 1024 * 1024
SAMPLE_S = 0.01  # how often the server's resident set is sampled
POLL_S = 0.01  # how often the feed's baseline asks Redis
PROBE = "probe"  # the replica of the feed's rows
DEFAULT_MAX_REQUESTS = HttpConfig().http_max_requests
SHARED = (
    "figures from a shared 2-core machine: other work may run beside this benchmark, so "
    "its timings are noisy (CPU seconds less so)"
)


def cli() -> list[str]:
    """The ``collection-manager`` command of this environment."""
    script = Path(sys.executable).with_name("collection-manager")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "collection_manager.cli.main"]


def db_url(url: str, db: int) -> str:
    """``url`` with database ``db``."""
    return urllib.parse.urlsplit(url)._replace(path=f"/{db}").geturl()


# --- the collection --------------------------------------------------------------------


def _row(i: int) -> Row:
    return (f"r{i // REPLICA_ROWS}", i % REPLICA_ROWS, i * 7)


def load_rows(store: RedisStore, rows: int) -> float:
    """Creates the collection and applies ``rows`` rows as the consumer would (two lanes,
    one partition each); returns the seconds it took."""
    store.create_collection(CollectionSpec(COLLECTION, ROW_SCHEMA, ("replica_id",)))
    per_call = REPLICA_ROWS * APPENDS_PER_CALL
    starts = range(0, rows, per_call)

    def lane(partition: int) -> None:
        for offset, first in enumerate(starts[partition::LANES]):
            appends = []
            for at in range(first, min(rows, first + per_call), REPLICA_ROWS):
                updates = tuple((_row(i), 1) for i in range(at, min(rows, at + REPLICA_ROWS)))
                appends.append(Append(COLLECTION, f"r{at // REPLICA_ROWS}", 1, updates, 0))
            requests = [(offset * APPENDS_PER_CALL + n, a) for n, a in enumerate(appends)]
            store.apply_requests("bench-http", partition, requests, validated=True)

    start = time.perf_counter()
    with ThreadPoolExecutor(LANES) as pool:
        for _ in pool.map(lane, range(LANES)):
            pass  # raises what a lane raised
    return time.perf_counter() - start


# --- processes -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Server:
    """A running ``serve``: its process id and base URL."""

    pid: int
    url: str

    @property
    def address(self) -> tuple[str, int]:
        parts = urllib.parse.urlsplit(self.url)
        return cast(str, parts.hostname), cast(int, parts.port)


def _stop(process: subprocess.Popen[bytes], grace_s: float = 30) -> None:
    """SIGTERM to the process's own group (it and its children), then SIGKILL."""
    if process.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(grace_s)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)  # what is left of its group
    process.wait()


@contextmanager
def serving(env: dict[str, str], log: Path, **settings: str) -> Iterator[Server]:
    """``collection-manager serve`` on a free loopback port with ``settings`` (CM_HTTP_*)."""
    env = {**env, "CM_HTTP_ADDRESS": "127.0.0.1:0", **settings}
    with open(log, "ab") as err:
        process = subprocess.Popen(
            [*cli(), "server", "run"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=err,
            start_new_session=True,
        )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], 60)
        line = process.stdout.readline().decode() if ready else ""
        found = re.search(r"serving the HTTP API and console at (\S+)/ ", line)
        if not found:
            raise RuntimeError(f"serve did not start: {line!r}; its log: {log}")
        server = Server(process.pid, found.group(1))
        _wait_ready(server)
        yield server
    finally:
        _stop(process)


def _wait_ready(server: Server, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        with contextlib.suppress(OSError):
            connection = http.client.HTTPConnection(*server.address, timeout=5)
            connection.request("GET", "/readyz")
            if connection.getresponse().status == 200:
                connection.close()
                return
        if time.monotonic() > deadline:
            raise RuntimeError(f"serve at {server.url} was not ready within {timeout_s:.0f} s")
        time.sleep(0.1)


# --- memory ----------------------------------------------------------------------------


def proc_status(pid: int) -> dict[str, int]:
    """``VmRSS`` and ``VmHWM`` of ``pid`` in bytes."""
    values = {}
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            name, _, rest = line.partition(":")
            if name in ("VmRSS", "VmHWM"):
                values[name] = int(rest.split()[0]) * 1024
    return values


def proc_cpu_s(pid: int) -> float:
    """CPU seconds ``pid`` used so far (user and system, its threads included)."""
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class MemoryWatch:
    """The resident set of ``pid`` during a block: the kernel's high-water mark reset at the
    start (``clear_refs`` 5), and the most ``VmRSS`` sampled every ``SAMPLE_S``."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.before = self.after = self.sampled_peak = 0
        self.hwm_peak: int | None = None
        self.cpu_s = 0.0
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="rss-sampler", daemon=True)

    def _reset_peak(self) -> bool:
        try:
            with open(f"/proc/{self.pid}/clear_refs", "w") as clear:
                clear.write("5")  # resets VmHWM to the current VmRSS (Linux >= 4.0)
        except OSError:
            return False
        return True

    def _sample(self) -> None:
        while not self._stopping.is_set():
            self.sampled_peak = max(self.sampled_peak, proc_status(self.pid)["VmRSS"])
            self._stopping.wait(SAMPLE_S)

    def __enter__(self) -> MemoryWatch:
        reset = self._reset_peak()
        self.before = proc_status(self.pid)["VmRSS"]
        self.sampled_peak = self.before
        self.cpu_s = -proc_cpu_s(self.pid)
        self._thread.start()
        self.hwm_peak = 0 if reset else None
        return self

    def __exit__(self, *exc: object) -> None:
        self._stopping.set()
        self._thread.join()
        status = proc_status(self.pid)
        self.cpu_s += proc_cpu_s(self.pid)
        self.after = status["VmRSS"]
        if self.hwm_peak is not None:
            self.hwm_peak = status["VmHWM"]

    def figures(self) -> dict[str, Any]:
        """Bytes: before, peak (the high-water mark, else the sampled peak), after."""
        peak = self.hwm_peak if self.hwm_peak is not None else self.sampled_peak
        return {
            "rss_before": self.before,
            "rss_peak": peak,
            "rss_peak_sampled": self.sampled_peak,
            "rss_after": self.after,
            "peak_from": "VmHWM" if self.hwm_peak is not None else "VmRSS sampled",
            "cpu_s": self.cpu_s,
        }


# --- whole reads -----------------------------------------------------------------------


def rows_path(name: str, **query: str | int) -> str:
    """The path of ``name``'s rows with ``query``'s parameters."""
    encoded = urllib.parse.urlencode(query)
    path = f"/api/v1/collections/{urllib.parse.quote(name, safe='')}/rows"
    return f"{path}?{encoded}" if encoded else path


def count_rows(media: str, body: bytes) -> int:
    """The rows an answer of ``media`` holds."""
    if media == ARROW:
        return int(pa.ipc.open_stream(body).read_all().num_rows)
    if media == NDJSON:
        return body.count(b"\n") - 1  # the header line, then a line per row
    return len(json.loads(body)["rows"])


def http_read(server: Server, path: str, media: str, timeout_s: float) -> dict[str, Any]:
    """One GET of ``path`` accepting ``media``: status, seconds to the answer's head and to
    its last byte, bytes, rows (counted after the clock stopped), or the problem."""
    connection = http.client.HTTPConnection(*server.address, timeout=timeout_s)
    try:
        start = time.perf_counter()
        connection.request("GET", path, headers={"Accept": media})
        response = connection.getresponse()
        head_s = time.perf_counter() - start
        parts = []
        while part := response.read1(MB):
            parts.append(part)
        wall_s = time.perf_counter() - start
    finally:
        connection.close()
    body = b"".join(parts)
    record: dict[str, Any] = {
        "status": response.status,
        "head_s": head_s,
        "wall_s": wall_s,
        "bytes": len(body),
    }
    if response.status == 200:
        record["rows"] = count_rows(media, body)
    else:
        problem = json.loads(body)
        record["problem"] = {k: problem.get(k) for k in ("type", "detail", "bound", "parameter")}
    return record


def query_read(env: dict[str, str], name: str, limit: int | None, log: Path) -> dict[str, Any]:
    """``collection-manager query NAME --format json [--limit N]`` as a process, its
    output read from a pipe: seconds from its start to its exit, its peak resident set
    (``ru_maxrss``), bytes and rows (counted after the clock stopped)."""
    command = [*cli(), "collections", "query", name, "--format", "json"]
    if limit is not None:
        command += ["--limit", str(limit)]
    with open(log, "ab") as err:
        start = time.perf_counter()
        process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=err)
        assert process.stdout is not None
        body = process.stdout.read()
        _, status, usage = os.wait4(process.pid, 0)
        wall_s = time.perf_counter() - start
    process.returncode = os.waitstatus_to_exitcode(status)
    if process.returncode != 0:
        raise RuntimeError(f"query exited {process.returncode}; its log: {log}")
    return {
        "wall_s": wall_s,
        "rss_peak": usage.ru_maxrss * 1024,  # KiB on Linux
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "bytes": len(body),
        "rows": len(json.loads(body)["rows"]),
    }


def _check_rows(read: dict[str, Any], expected: int, what: str) -> None:
    if read.get("rows") != expected:
        raise AssertionError(f"{what} returned {read.get('rows')} rows, not {expected}: {read}")


def whole_reads(
    server: Server, env: dict[str, str], args: argparse.Namespace, logs: Path
) -> dict[str, Any]:
    """Part 1: the whole collection as Arrow and NDJSON against ``query``; JSON's refusal;
    and JSON, NDJSON and ``query`` at the JSON bound."""
    timeout_s = float(env["CM_HTTP_REQUEST_TIMEOUT_S"]) + 30
    # The server's first Arrow answers (of ``limit`` rows), before any other read: pyarrow
    # imports pandas, when installed, at its first ``pa.array``.
    first_arrow = []
    for _ in range(2):
        with MemoryWatch(server.pid) as memory:
            path = rows_path(COLLECTION, where="replica_id=r0", limit=args.limit)
            read = http_read(server, path, ARROW, timeout_s)
        _check_rows(read, args.limit, "a small Arrow read")
        first_arrow.append(read | memory.figures())
    full: dict[str, list[dict[str, Any]]] = {"arrow": [], "ndjson": [], "query": []}
    for repeat in range(args.repeats):
        print(f"rows: whole reads, round {repeat + 1} of {args.repeats}", flush=True)
        if not repeat:  # once: it is the slowest of the reads by far
            read = query_read(env, COLLECTION, None, logs / "query.log")
            _check_rows(read, args.rows, "query")
            full["query"].append(read)
        for label, media in (("arrow", ARROW), ("ndjson", NDJSON)):
            with MemoryWatch(server.pid) as memory:
                read = http_read(server, rows_path(COLLECTION), media, timeout_s)
            _check_rows(read, args.rows, f"the {label} read")
            full[label].append(read | memory.figures())
    with MemoryWatch(server.pid) as memory:
        refused = http_read(server, rows_path(COLLECTION), JSON, timeout_s)
    refused |= memory.figures()
    bound = args.json_rows
    at_bound: dict[str, dict[str, Any]] = {}
    for label, media in (("json", JSON), ("ndjson", NDJSON), ("arrow", ARROW)):
        with MemoryWatch(server.pid) as memory:
            read = http_read(server, rows_path(COLLECTION, limit=bound), media, timeout_s)
        _check_rows(read, bound, f"the {label} read of {bound} rows")
        at_bound[label] = read | memory.figures()
    at_bound["query"] = query_read(env, COLLECTION, bound, logs / "query.log")
    _check_rows(at_bound["query"], bound, f"query --limit {bound}")
    # What starting query costs: the same command for one row.
    startup = [query_read(env, COLLECTION, 1, logs / "query.log")["wall_s"] for _ in range(2)]
    return {
        "rows": args.rows,
        "full": {label: _summary(reads) for label, reads in full.items()},
        "full_reads": full,
        "json_refused": refused,
        "json_rows": bound,
        "at_json_bound": at_bound,
        "query_startup_s": min(startup),
        "first_arrow": first_arrow,
    }


def _summary(reads: list[dict[str, Any]]) -> dict[str, Any]:
    """The median wall time and rows/s, the highest peak resident set, the resident set
    after the last read."""
    wall_s = statistics.median(r["wall_s"] for r in reads)
    out = {
        "wall_s": wall_s,
        "rows_per_s": reads[0]["rows"] / wall_s,
        "rss_peak": max(r["rss_peak"] for r in reads),
        "bytes": reads[0]["bytes"],
        "reads": len(reads),
        "cpu_s": statistics.median(r["cpu_s"] for r in reads),
    }
    if "head_s" in reads[0]:
        out["head_s"] = statistics.median(r["head_s"] for r in reads)
        out["rss_before"] = reads[0]["rss_before"]
        out["rss_after"] = [r["rss_after"] for r in reads]
        out["rss_peak_sampled"] = max(r["rss_peak_sampled"] for r in reads)
        out["peak_from"] = reads[0]["peak_from"]
    return out


# --- point queries ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PointLoad:
    """What each client process does: ``kind`` ``http`` (``target`` the server's URL) or
    ``store`` (``target`` the Redis URL)."""

    kind: str
    target: str
    threads: int
    replicas: int
    limit: int
    warmup_s: float
    duration_s: float
    seed: int


def _http_point(load: PointLoad) -> Callable[[str], tuple[int, float]]:
    """A client's read: (status, seconds it waits before its next read)."""
    parts = urllib.parse.urlsplit(load.target)
    connection = http.client.HTTPConnection(
        cast(str, parts.hostname), cast(int, parts.port), timeout=60
    )

    def read(replica: str) -> tuple[int, float]:
        path = rows_path(COLLECTION, where=f"replica_id={replica}", limit=load.limit)
        connection.request("GET", path, headers={"Accept": JSON})
        response = connection.getresponse()
        body = response.read()
        if response.status == 200:
            if len(json.loads(body)["rows"]) != load.limit:
                raise AssertionError(f"{path} did not return {load.limit} rows: {body[:200]!r}")
            return 200, 0.0
        return response.status, float(response.getheader("Retry-After") or 0)

    return read


def _store_point(load: PointLoad, client: redis.Redis) -> Callable[[str], tuple[int, float]]:
    def read(replica: str) -> tuple[int, float]:
        store = RedisStore(client)  # per read, as the server's (it caches no definition)
        spec = store.spec(COLLECTION)
        where = parse_where([f"replica_id={replica}"], spec, "where")
        rows = store.stepped_snapshot(spec.name, where, load.limit).rows
        if len(rows) != load.limit:
            raise AssertionError(f"{replica}: {len(rows)} rows, not {load.limit}")
        return 200, 0.0

    return read


def point_clients(load: PointLoad, ready: Any, go: Any, start_at: Any, send: Any) -> None:
    """One client process: ``load.threads`` clients in a closed loop once told to go.

    A read that is refused (503) is sent again after its ``Retry-After``; it counts from its
    first attempt to its answer. Sends the times of the answers and of the reads begun
    after the warm-up, and how many attempts were refused.
    """
    client = redis_client(load.target) if load.kind == "store" else None
    readers = [
        _http_point(load) if client is None else _store_point(load, client)
        for _ in range(load.threads)
    ]
    answers: list[float] = []
    reads: list[float] = []
    refused = [0]
    every = [0]  # reads answered, the warm-up's and the last ones' included
    failures: list[str] = []
    lock = threading.Lock()

    def loop(n: int, measured_from: float, ends: float) -> None:
        rng = random.Random(load.seed * 1_000 + n)
        read = readers[n]
        mine_answers, mine_reads, mine_refused, mine_all = [], [], 0, 0
        try:
            while (began := time.monotonic()) < ends:
                replica = f"r{rng.randrange(load.replicas)}"
                while True:
                    attempt = time.monotonic()
                    status, wait_s = read(replica)
                    answered = time.monotonic()
                    measured = began >= measured_from
                    if status == 200:
                        mine_all += 1
                        if measured:
                            mine_answers.append(answered - attempt)
                            mine_reads.append(answered - began)
                        break
                    if status != 503:
                        raise AssertionError(f"status {status}")
                    mine_refused += measured
                    # Retry-After, as a polite client does (until the end at most)
                    time.sleep(max(0.0, min(wait_s, ends - answered)))
                    if answered + wait_s >= ends:
                        break
        except Exception as exc:
            with lock:
                failures.append(f"{type(exc).__name__}: {exc}"[:300])
        with lock:
            answers.extend(mine_answers)
            reads.extend(mine_reads)
            refused[0] += mine_refused
            every[0] += mine_all

    ready.set()
    go.wait()
    measured_from = start_at.value + load.warmup_s
    ends = measured_from + load.duration_s
    threads = [
        threading.Thread(target=loop, args=(n, measured_from, ends)) for n in range(load.threads)
    ]
    cpu_s = time.process_time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    cpu_s = time.process_time() - cpu_s
    send.send(
        {
            "answers_s": answers,
            "reads_s": reads,
            "refused": refused[0],
            "every": every[0],
            "cpu_s": cpu_s,
            "failures": failures,
        }
    )


WARMUP_S = 1.0  # of each point phase, not measured


def point_phase(
    kind: str, target: str, args: argparse.Namespace, server_pid: int | None = None
) -> dict[str, Any]:
    """``args.clients`` clients in ``args.client_processes`` processes, for ``args.point_s``
    seconds after a second of warm-up: latency percentiles, reads/s, refusals, and the CPU
    seconds per read of the clients and of the server (``server_pid``), over every read."""
    context = multiprocessing.get_context("spawn")  # no fork of a process with threads
    go, start_at = context.Event(), context.Value("d", 0.0)
    processes, pipes = [], []
    per_process = [
        args.clients // args.client_processes + (n < args.clients % args.client_processes)
        for n in range(args.client_processes)
    ]
    for n, threads in enumerate(per_process):
        load = PointLoad(
            kind,
            target,
            threads,
            args.rows // REPLICA_ROWS,
            args.limit,
            WARMUP_S,
            args.point_s,
            args.seed + n,
        )
        receive, send = context.Pipe(duplex=False)
        ready = context.Event()
        process = context.Process(target=point_clients, args=(load, ready, go, start_at, send))
        process.start()
        processes.append(process)
        pipes.append((receive, ready))
    try:
        for _, ready in pipes:
            if not ready.wait(120):
                raise RuntimeError("a client process was not ready within 120 s")
        server_cpu_s = -proc_cpu_s(server_pid) if server_pid else 0.0
        start_at.value = time.monotonic()  # system-wide: the same clock in every process
        go.set()
        results = [receive.recv() for receive, _ in pipes]
        server_cpu_s += proc_cpu_s(server_pid) if server_pid else 0.0
    finally:
        go.set()
        for process in processes:
            process.join(30)
            if process.is_alive():
                process.terminate()
                process.join()
    failures = [f for r in results for f in r["failures"]]
    if failures:
        raise RuntimeError(f"{len(failures)} clients failed, e.g. {failures[0]}")
    answers = [s * 1e3 for r in results for s in r["answers_s"]]
    reads = [s * 1e3 for r in results for s in r["reads_s"]]
    refused = sum(r["refused"] for r in results)
    every = sum(r["every"] for r in results)
    return {
        "kind": kind,
        "clients": args.clients,
        "reads": len(reads),
        "per_s": len(reads) / args.point_s,
        "refused": refused,
        "refused_share": refused / (refused + len(answers)) if answers else float("nan"),
        **_quantiles_ms(answers),
        "reads_ms": _quantiles_ms(reads),
        "client_cpu_ms_per_read": sum(r["cpu_s"] for r in results) * 1e3 / every,
        "server_cpu_ms_per_read": server_cpu_s * 1e3 / every if server_pid else None,
    }


def _quantiles_ms(values_ms: Sequence[float]) -> dict[str, float]:
    if len(values_ms) < 2:
        return {"p50_ms": float("nan"), "p99_ms": float("nan"), "max_ms": float("nan")}
    cuts = statistics.quantiles(values_ms, n=100, method="inclusive")
    return {"p50_ms": cuts[49], "p99_ms": cuts[98], "max_ms": max(values_ms)}


# --- the change feed -------------------------------------------------------------------


class FeedReader(threading.Thread):
    """Follows a collection's ``/changes`` stream: when each probe row's change came."""

    def __init__(self, server: Server, name: str) -> None:
        super().__init__(name="sse-reader", daemon=True)
        self.connection = http.client.HTTPConnection(*server.address, timeout=60)
        self.path = f"/api/v1/collections/{urllib.parse.quote(name, safe='')}/changes"
        self.arrivals: dict[int, float] = {}
        self.events = 0
        self.positioned = threading.Event()
        self.error: str | None = None
        self._stopping = threading.Event()

    def run(self) -> None:
        try:
            self._follow()
        except Exception as exc:
            if not self._stopping.is_set():
                self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.positioned.set()  # a waiter learns of the error

    def _follow(self) -> None:
        self.connection.request("GET", self.path, headers={"Accept": EVENT_STREAM})
        response = self.connection.getresponse()
        if response.status != 200:
            self.error = f"status {response.status}: {response.read()[:300]!r}"
            return
        kind = "message"
        while line := response.readline():
            arrived = time.monotonic()
            if line.startswith(b"event:"):
                kind = line[6:].strip().decode()
            elif line.startswith(b"data:"):
                data = json.loads(line[5:])
                if kind == "position":
                    self.positioned.set()
                elif kind == "changes":
                    self.events += 1
                    for change in data["changes"]:
                        row = change["row"]
                        if row["replica_id"] == PROBE and change["diff"] > 0:
                            self.arrivals.setdefault(row["operator_id"], arrived)
                elif kind == "error":
                    self.error = f"the stream ended: {data}"
                    return
            elif line == b"\n":
                kind = "message"
        if not self._stopping.is_set():
            self.error = "the stream ended"

    def stop(self) -> None:
        self._stopping.set()
        sock = self.connection.sock
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(2)  # wakes the reader, which is blocked in readline
        self.join(10)
        self.connection.close()


class VisibilityPoller(threading.Thread):
    """Asks Redis every ``POLL_S``, in one pipeline of ``HEXISTS``, whether each pending
    probe row is in the collection's contents: when each became visible."""

    def __init__(self, redis_url: str, name: str) -> None:
        super().__init__(name="redis-poller", daemon=True)
        self.client = redis_client(redis_url)
        self.key = CollectionKeys(name).contents
        self.pending: dict[int, str] = {}
        self.visible: dict[int, float] = {}
        self._lock = threading.Lock()
        self._stopping = threading.Event()

    def add(self, seq: int, field: str) -> None:
        with self._lock:
            self.pending[seq] = field

    def run(self) -> None:
        while not self._stopping.is_set():
            self.poll()
            self._stopping.wait(POLL_S)

    def poll(self) -> None:
        with self._lock:
            waiting = list(self.pending.items())
        if not waiting:
            return
        with self.client.pipeline(transaction=False) as pipe:
            for _, field in waiting:
                pipe.hexists(self.key, field)
            seen = pipe.execute()
        now = time.monotonic()
        with self._lock:
            for (seq, _), visible in zip(waiting, seen, strict=True):
                if visible:
                    self.visible[seq] = now
                    self.pending.pop(seq, None)

    def stop(self) -> None:
        self._stopping.set()
        self.join()


def _probe(seq: int) -> tuple[bytes, bytes, str]:
    """The request of probe ``seq``: its key, its encoded Append, its row's hash field."""
    row = (PROBE, seq, seq)
    append = Append(FEED_COLLECTION, PROBE, 1, ((row, 1),), produced_at=int(time.time() * 1e3))
    return FEED_COLLECTION.encode(), encode_request(append), encode_row(row)


@contextmanager
def consuming(env: dict[str, str], topic: str, tmp: Path, log: Path) -> Iterator[None]:
    """``collection-manager consume`` of ``topic`` (its default trigger and master), with a
    checkpoint of its own; stopped (SIGTERM, then SIGKILL) after."""
    env = {
        **env,
        "CM_TOPIC": topic,
        "CM_DEAD_LETTER_TOPIC": f"{topic}-dead",
        "CM_CHECKPOINT_DIR": str(tmp / "checkpoint"),
    }
    with open(log, "ab") as out:
        process = subprocess.Popen(
            [*cli(), "consumer", "run"],
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its Spark JVM and workers in its group
        )
    try:
        deadline = time.monotonic() + 240
        while "consumer running" not in log.read_text(errors="replace"):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the consumer did not start; its log: {log}")
            time.sleep(0.2)
        yield
    finally:
        _stop(process)


def _wait(done: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def feed_latency(
    endpoints: Endpoints, env: dict[str, str], args: argparse.Namespace, tmp: Path
) -> dict[str, Any]:
    """Part 3: produce to the change on an SSE client, against produce to visible in Redis."""
    redis_url = env["CM_REDIS_URL"]
    store = RedisStore(redis_client(redis_url))
    store.create_collection(CollectionSpec(FEED_COLLECTION, ROW_SCHEMA, ("replica_id",)))
    topic = f"bench-http-feed-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(ProducerConfig(endpoints.kafka_bootstrap, client_id="bench-http"))
    poller = VisibilityPoller(redis_url, FEED_COLLECTION)
    count = round(args.feed_rate * args.feed_s)
    warm = range(-args.feed_warmup, 0)  # negative sequence numbers: not measured
    with (
        scratch_topic(endpoints, topic, 4),
        consuming(env, topic, tmp, tmp / "consume.log"),
        serving(env, tmp / "serve-feed.log") as server,
    ):
        print("feed: the consumer runs; warming it up", flush=True)
        poller.start()
        for seq in warm:  # the first batches start Spark's Python workers
            key, value, field = _probe(seq)
            poller.add(seq, field)
            producer.produce(topic, key, value)
        producer.flush(30)
        if not _wait(lambda: all(s in poller.visible for s in warm), 240):
            raise RuntimeError("the consumer applied none of the warm-up requests in 240 s")
        reader = FeedReader(server, FEED_COLLECTION)
        reader.start()
        reader.positioned.wait(30)
        if reader.error:
            raise RuntimeError(f"the change stream failed: {reader.error}")
        print(f"feed: {count} requests at {args.feed_rate:g}/s", flush=True)
        published: dict[int, float] = {}
        start = time.monotonic()
        for seq in range(count):
            key, value, field = _probe(seq)
            delay = start + seq / args.feed_rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            poller.add(seq, field)
            published[seq] = time.monotonic()
            producer.produce(topic, key, value)
        producer.flush(30)
        _wait(lambda: all(s in reader.arrivals and s in poller.visible for s in published), 60)
        reader.stop()
        poller.stop()
    producer.close(10)
    sse = [(reader.arrivals[s] - t) * 1e3 for s, t in published.items() if s in reader.arrivals]
    seen = [(poller.visible[s] - t) * 1e3 for s, t in published.items() if s in poller.visible]
    both = [s for s in published if s in reader.arrivals and s in poller.visible]
    gap = [(reader.arrivals[s] - poller.visible[s]) * 1e3 for s in both]
    return {
        "requests": count,
        "rate": args.feed_rate,
        "sse": _quantiles_ms(sse) | {"seen": len(sse)},
        "redis": _quantiles_ms(seen) | {"seen": len(seen)},
        "gap": _quantiles_ms(gap),
        "events": reader.events,
        "stream_error": reader.error,
    }


# --- the run ---------------------------------------------------------------------------


def parser() -> argparse.ArgumentParser:
    """The benchmark's scale options."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rows", type=int, default=1_000_000, help="rows read whole")
    parser.add_argument("--repeats", type=int, default=2, help="whole reads of each kind")
    parser.add_argument(
        "--json-rows",
        type=int,
        default=HttpConfig().http_max_rows,
        help="rows of the JSON read (the server's CM_HTTP_MAX_ROWS, its default)",
    )
    parser.add_argument("--clients", type=int, default=50, help="concurrent point readers")
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--limit", type=int, default=10, help="rows of each point query")
    parser.add_argument("--point-s", type=float, default=8.0, help="seconds of point queries")
    parser.add_argument("--feed-rate", type=float, default=20.0, help="requests/s produced")
    parser.add_argument("--feed-s", type=float, default=15.0, help="seconds of producing")
    parser.add_argument("--feed-warmup", type=int, default=10, help="requests before, unmeasured")
    parser.add_argument(
        "--timeout-s",
        type=float,
        default=120.0,
        help="the server's CM_HTTP_REQUEST_TIMEOUT_S (default 30: a shared machine's "
        "million-row read may take longer)",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--db", type=int, default=2, help="an empty Redis database, emptied again at the end"
    )
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    """The three parts' figures."""
    if args.rows % REPLICA_ROWS or args.rows < args.json_rows:
        raise SystemExit(f"--rows must be whole replicas of {REPLICA_ROWS} rows, >= --json-rows")
    with services() as endpoints, tempfile.TemporaryDirectory(prefix="bench-http-") as scratch:
        tmp = Path(scratch)
        url = db_url(endpoints.redis_url, args.db)
        client = redis.Redis.from_url(url, socket_timeout=CALL_TIMEOUT_S)
        if keys := client.dbsize():
            raise SystemExit(
                f"http_reads uses Redis database {args.db} and empties it after, but it holds "
                f"{keys} keys: choose an empty one with --db"
            )
        env = {
            **os.environ,
            "CM_REDIS_URL": url,
            "CM_KAFKA_BOOTSTRAP": endpoints.kafka_bootstrap,
            "CM_HTTP_REQUEST_TIMEOUT_S": f"{args.timeout_s:g}",
        }
        env.pop("CM_HTTP_TOKEN", None)
        try:
            load_s = load_rows(RedisStore(client), args.rows)
            print(f"rows: {args.rows:,} loaded in {load_s:.1f} s", flush=True)
            with serving(env, tmp / "serve.log") as server:
                rows = whole_reads(server, env, args, tmp)
                print("points: over HTTP, the default bound of answers at once", flush=True)
                bounded = point_phase("http", server.url, args, server.pid)
            settings = {"CM_HTTP_MAX_REQUESTS": str(args.clients)}
            with serving(env, tmp / "serve.log", **settings) as server:
                print(f"points: over HTTP, {args.clients} answers at once", flush=True)
                unbounded = point_phase("http", server.url, args, server.pid)
            print("points: the store in-process (baseline)", flush=True)
            direct = point_phase("store", url, args)
            feed = feed_latency(endpoints, env, args, tmp)
        finally:
            client.flushdb()
    return {
        "rows": rows,
        "points": {
            "default_bound": bounded | {"max_requests": DEFAULT_MAX_REQUESTS},
            "client_bound": unbounded | {"max_requests": args.clients},
            "store": direct,
            "limit": args.limit,
        },
        "feed": feed,
        "load_s": load_s,
        "shared_machine": SHARED,
        "load_average": list(os.getloadavg()),
    }


def main() -> None:
    args = parser().parse_args()
    result = run(args)
    figures = http_reads({"scale": vars(args), "figures": result})
    rows = [
        (
            f.name + (f" ({f.note})" if f.note else ""),
            number(f.value, f.unit),
            number(f.baseline, f.unit) + (f" ({f.baseline_name})" if f.baseline_name else ""),
            ratio(f.ratio),
        )
        for f in figures
    ]
    report(
        "http_reads",
        ["figure", "value", "baseline (same run)", "ratio"],
        rows,
        {"scale": vars(args), **result},
    )
    print(SHARED)


if __name__ == "__main__":
    main()
