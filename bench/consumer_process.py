"""The Spark consumer in a process of its own, pinned to the cores under test.

The process (spawned: this one has Kafka threads running) pins itself first
(``pinning.pin_tree``), before it starts a thread or the JVM, so the driver, the JVM and
Spark's Python workers all inherit its cores; then it keeps one Spark session on
``local[<cores>]`` and runs one supervised query at a time (``bench.buckets``'
``supervised_consumer``, as ``consume`` runs it), on the topic the benchmark asks for,
answering its phase totals on demand over a pipe. Its CPU is counted apart from this
process's (``bench/cpu.py``: the Spark driver process, its JVM, its Python workers), so
the benchmark's own process is the load generator alone.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import traceback
from collections.abc import Iterator, Sequence
from multiprocessing.connection import Connection
from typing import Any

from bench import pinning
from bench.e2e_paths import Phases
from collection_manager.devservices import Endpoints

START_TIMEOUT_S = 180  # a Spark session on one busy core takes long to start


def _serve(cores: Sequence[int], endpoints: Endpoints, trigger_ms: int, pipe: Connection) -> None:
    """The child: a session, then queries as ``pipe`` asks (start, phases, stop, exit)."""
    pinning.pin_tree(os.getpid(), cores)
    from bench.buckets import supervised_consumer
    from bench.e2e_paths import bench_session

    spark = bench_session(f"local[{len(cores)}]", f"bench-curves-{len(cores)}-cores")
    pipe.send(("ready", None))
    query: contextlib.ExitStack | None = None
    phases: Phases | None = None
    try:
        while True:
            command, topic = pipe.recv()
            try:
                if command == "start":
                    query = contextlib.ExitStack()
                    phases = query.enter_context(
                        supervised_consumer(spark, endpoints, topic, trigger_ms)
                    )
                    pipe.send(("ok", None))
                elif command == "phases" and phases is not None:
                    pipe.send(("ok", phases()))
                elif command == "stop" and query is not None:
                    query.close()
                    query = phases = None
                    pipe.send(("ok", None))
                elif command == "exit":
                    pipe.send(("ok", None))
                    return
                else:
                    pipe.send(("error", f"{command!r} now is not understood"))
            except Exception:  # told to the benchmark, which raises it there
                pipe.send(("error", traceback.format_exc()))
    finally:
        if query is not None:
            query.close()
        spark.stop()


class ConsumerProcess:
    """The parent's handle: starts queries in the child and asks it for phase totals."""

    def __init__(self, pipe: Connection, process: multiprocessing.process.BaseProcess) -> None:
        self.pipe = pipe
        self.process = process

    def ask(self, command: str, topic: str = "", timeout_s: float = 120) -> Any:
        """Sends ``command`` and returns the child's answer; raises on its error."""
        while self.pipe.poll(0):  # a late answer to a command that timed out is not this one's
            self.pipe.recv()
        self.pipe.send((command, topic))
        if not self.pipe.poll(timeout_s):
            raise RuntimeError(f"the consumer process did not answer {command!r} in {timeout_s} s")
        status, value = self.pipe.recv()
        if status != "ok":
            raise RuntimeError(f"the consumer process failed at {command!r}:\n{value}")
        return value

    @contextlib.contextmanager
    def consuming(self, topic: str) -> Iterator[Phases]:
        """A query on ``topic`` while inside; its phase totals through the returned call."""
        self.ask("start", topic)
        try:
            yield lambda: dict(self.ask("phases"))
        finally:
            self.ask("stop")


@contextlib.contextmanager
def consumer_process(
    cores: Sequence[int], endpoints: Endpoints, trigger_ms: int
) -> Iterator[ConsumerProcess]:
    """The consumer's process on ``cores``, its session started; stopped after."""
    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    process = context.Process(
        target=_serve, args=(tuple(cores), endpoints, trigger_ms, child), name="bench-consumer"
    )
    process.start()
    child.close()  # the child's end is its own now: its death reads as an end of file here
    try:
        try:
            ready = parent.poll(START_TIMEOUT_S) and parent.recv()[0] == "ready"
        except EOFError:
            process.join(10)
            raise RuntimeError(
                f"the consumer process ended before it was ready (exit code {process.exitcode})"
            ) from None
        if not ready:
            raise RuntimeError(f"the consumer process did not start in {START_TIMEOUT_S} s")
        pinning.pin_tree(process.pid or 0, cores)  # the JVM and its threads, to be sure
        yield ConsumerProcess(parent, process)
    finally:
        if process.is_alive():  # its session stopped in turn, also after a failed step
            with contextlib.suppress(RuntimeError, OSError):
                ConsumerProcess(parent, process).ask("exit", timeout_s=60)
        process.join(60)
        if process.is_alive():
            process.terminate()
            process.join(30)
        parent.close()
