"""What a benchmark run ran on: hardware, OS, versions, the date and the git commit."""

from __future__ import annotations

import datetime
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import redis

from collection_manager.config import KAFKA_VERSION, InfraConfig
from collection_manager.devservices import Endpoints

ROOT = Path(__file__).resolve().parents[1]


def _first_line(command: list[str], stderr: bool = False) -> str:
    try:
        out = subprocess.run(command, capture_output=True, text=True, timeout=30, cwd=ROOT)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"unknown ({exc})"
    text = (out.stderr if stderr else out.stdout).strip()
    return text.splitlines()[0] if text else "unknown"


def _proc_field(path: str, field: str) -> str | None:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        key, _, value = line.partition(":")
        if key.strip() == field:
            return value.strip()
    return None


def _os_name() -> str:
    pretty = None
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                pretty = line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return f"{pretty or platform.system()} (kernel {platform.release()})"


def _memory_gib() -> float | None:
    total = _proc_field("/proc/meminfo", "MemTotal")  # "24000000 kB"
    return None if total is None else int(total.split()[0]) / 2**20


def git_commit() -> dict[str, Any]:
    """The checked-out commit and whether tracked files differ from it."""
    commit = _first_line(["git", "rev-parse", "HEAD"])
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
        cwd=ROOT,
        check=False,
    )
    return {"commit": commit, "dirty": bool(status.stdout.strip())}


def describe(endpoints: Endpoints | None, config: InfraConfig) -> dict[str, Any]:
    """The machine and software versions, the date and the commit, as plain values."""
    redis_version = "not used"
    if endpoints is not None:
        client = redis.Redis.from_url(endpoints.redis_url)
        redis_version = str(client.info("server")["redis_version"])
    kafka = f"{KAFKA_VERSION} (local KRaft broker)"
    if config.kafka_bootstrap:
        kafka = f"configured broker at {config.kafka_bootstrap}"
    return {
        "date": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "cpu_model": _proc_field("/proc/cpuinfo", "model name") or platform.processor(),
        "cores": os.cpu_count(),
        "memory_gib": _memory_gib(),
        "os": _os_name(),
        "python": platform.python_version(),
        "java": _first_line(["java", "-version"], stderr=True),
        "redis": redis_version,
        "kafka": kafka,
        "spark": importlib.metadata.version("pyspark"),
        "load_average": os.getloadavg(),
        "git": git_commit(),
    }
