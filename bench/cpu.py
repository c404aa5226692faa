"""CPU seconds per process kind, from ``/proc``: where a benchmark's CPU goes.

A kind is a set of process trees: the Kafka broker and Redis (their recorded pids, and the
nodes of a Redis Cluster this process started), this benchmark process (the producer, the
watcher and, for Spark, the driver), the Spark JVMs (this process's Java children: the
driver's, or a standalone Master and Workers with their executors), Spark's Python
workers (the JVMs' Python descendants), the plain loop (a Python child) and, apart from
this process, a Spark driver process (a Python child that started a JVM:
``bench/consumer_process.py``; its JVM and Python workers count as above). A process
counts its own time and the time of the children it reaped (``cutime``/``cstime``), so
Python workers that exited between two samples are still counted, once, by the daemon
that reaped them.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path

from collection_manager.config import InfraConfig, from_env
from collection_manager.config.services import load_services

BROKER, REDIS, BENCH, JVM, WORKERS, PLAIN = (
    "Kafka broker",
    "Redis",
    "benchmark process (producer, watcher, Spark driver)",
    "Spark JVM",
    "Spark Python workers",
    "plain loop process",
)
KINDS = (BROKER, REDIS, BENCH, JVM, WORKERS, PLAIN)
# Only in the totals when such a process runs, so other benchmarks' kinds stay as they were.
DRIVER = "Spark driver process"
SERVICES = {"kafka": BROKER, "redis": REDIS}  # the names in the services record


def parse_stat(text: str) -> tuple[int, float]:
    """(parent pid, CPU ticks of the process and its reaped children) of a ``stat`` line."""
    # The command name is in parentheses and may hold spaces: split after its last ')'.
    fields = text[text.rindex(")") + 2 :].split()
    utime, stime, cutime, cstime = (int(fields[i]) for i in (11, 12, 13, 14))
    return int(fields[1]), float(utime + stime + cutime + cstime)


def process_table() -> dict[int, tuple[int, float, str]]:
    """pid -> (parent pid, CPU seconds, command line) of every process now."""
    ticks = os.sysconf("SC_CLK_TCK")
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            parent, cpu = parse_stat((entry / "stat").read_text())
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, ValueError):
            continue  # it exited meanwhile
        found[int(entry.name)] = (parent, cpu / ticks, cmdline)
    return found


def classify(
    processes: Mapping[int, tuple[int, float, str]], me: int, services: Mapping[str, int]
) -> dict[str, float]:
    """CPU seconds per kind (pure: ``processes`` as ``process_table`` returns them).

    Args:
        me: this benchmark's pid.
        services: the broker's and Redis's pids, by kind (absent: not measured).
    """
    children: dict[int, list[int]] = {}
    for pid, (parent, _cpu, _cmd) in processes.items():
        children.setdefault(parent, []).append(pid)

    def tree(root: int) -> Iterable[int]:
        yield root
        for child in children.get(root, ()):
            yield from tree(child)

    totals = dict.fromkeys(KINDS, 0.0)
    counted: set[int] = set()  # services this benchmark started are its children too
    for kind, pid in services.items():
        if pid in processes:
            counted.update(tree(pid))
            totals[kind] = sum(processes[p][1] for p in tree(pid))
    if me in processes:
        totals[BENCH] = processes[me][1]
    for child in children.get(me, ()):
        if child in counted:
            continue
        program = _program(processes[child][2])
        if "redis-server" in program:  # the nodes of a Redis Cluster it started
            totals[REDIS] += sum(processes[p][1] for p in tree(child))
        elif "java" in program:  # Spark's driver JVM, or a standalone Master or Worker
            # Told apart by the program, not the command line: the JVM's class path names
            # pyspark's jars too.
            for p in tree(child):
                kind = WORKERS if "python" in _program(processes[p][2]) else JVM
                totals[kind] += processes[p][1]
        elif "python" in program:
            jvms = [p for p in tree(child) if "java" in _program(processes[p][2])]
            if not jvms:
                totals[PLAIN] += sum(processes[p][1] for p in tree(child))
                continue
            # A Spark driver process with its JVM (and the JVM's Python workers) below it.
            inside = {p for jvm in jvms for p in tree(jvm)}
            own = sum(processes[p][1] for p in tree(child) if p not in inside)
            totals[DRIVER] = totals.get(DRIVER, 0.0) + own
            for p in inside:
                kind = WORKERS if "python" in _program(processes[p][2]) else JVM
                totals[kind] += processes[p][1]
    return totals


def _program(command_line: str) -> str:
    return command_line.split(" ")[0]


def cpu_by_kind() -> dict[str, float]:
    """CPU seconds used so far per kind (see ``classify``), the services' pids as recorded
    by the local services this run uses (configured services are not measured)."""
    recorded = load_services(from_env(InfraConfig).services_file)
    services = {kind: recorded[name].pid for name, kind in SERVICES.items() if name in recorded}
    return classify(process_table(), os.getpid(), services)


def per_million(
    before: Mapping[str, float], after: Mapping[str, float], updates: int
) -> dict[str, float]:
    """CPU seconds per million updates per kind between two samples (and ``all``)."""
    used = {kind: max(0.0, after[kind] - before.get(kind, 0.0)) for kind in after}
    used["all"] = sum(used.values())
    return {kind: seconds / updates * 1e6 for kind, seconds in used.items()} if updates else {}
