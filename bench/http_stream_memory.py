"""The peak resident set of ``server run`` streaming a collection whole as NDJSON and Arrow,
so that a read of 10^7 rows can be set against one of 10^6 (bounded: about equal).

Needs a Redis holding ``bench/http_reads.py``'s collection (``--load N`` makes it there
with ``load_rows``); starts a ``collection-manager server run`` of its own on it, reads the rows
whole with each ``Accept`` and prints the server's ``VmHWM``, reset before each read.
Figures: bench/notes.md ("Rows streamed over HTTP at 10^7 rows").

    .venv/bin/python -m bench.http_stream_memory redis://127.0.0.1:6399/1 --load 1000000
"""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import time

import requests

from bench.http_reads import COLLECTION, cli, load_rows
from collection_manager.http.negotiation import ARROW, NDJSON
from collection_manager.storage.client import redis_client
from collection_manager.storage.store import RedisStore

MEDIA = (NDJSON, ARROW)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _memory_mib(pid: int) -> dict[str, int]:
    with open(f"/proc/{pid}/status") as status:
        fields = [line.split() for line in status]
    return {f[0].rstrip(":"): int(f[1]) // 1024 for f in fields if f[0] in ("VmHWM:", "VmRSS:")}


def measure(redis_url: str) -> None:
    """Starts ``server run`` on ``redis_url`` and prints each whole read's figures."""
    port = _free_port()
    env = dict(os.environ, CM_REDIS_URL=redis_url, CM_HTTP_ADDRESS=f"127.0.0.1:{port}")
    env["CM_HTTP_REQUEST_TIMEOUT_S"] = "60"
    server = subprocess.Popen([*cli(), "server", "run"], env=env, stdout=subprocess.DEVNULL)
    base = f"http://127.0.0.1:{port}"
    try:
        for _ in range(300):
            try:
                if requests.get(f"{base}/healthz", timeout=2).ok:
                    break
            except requests.ConnectionError:
                time.sleep(0.1)
        print("idle", _memory_mib(server.pid), flush=True)
        for media in MEDIA:
            with open(f"/proc/{server.pid}/clear_refs", "w") as refs:
                refs.write("5")  # resets VmHWM
            started, size = time.perf_counter(), 0
            url = f"{base}/api/v1/collections/{COLLECTION}/rows"
            with requests.get(url, headers={"Accept": media}, stream=True, timeout=120) as read:
                read.raise_for_status()
                for chunk in read.iter_content(1 << 20):
                    size += len(chunk)
            wall = time.perf_counter() - started
            print(media, f"{wall:.1f} s, {size / 2**20:.0f} MiB", _memory_mib(server.pid))
    finally:
        server.terminate()
        server.wait(30)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("redis_url")
    parser.add_argument("--load", type=int, default=0, help="rows to load first")
    args = parser.parse_args()
    if args.load:
        seconds = load_rows(RedisStore(redis_client(args.redis_url)), args.load)
        print(f"loaded {args.load} rows in {seconds:.1f} s", flush=True)
    measure(args.redis_url)


if __name__ == "__main__":
    main()
