"""Helpers shared by the tests."""

from __future__ import annotations

import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def assert_eventually(check: Callable[[], T], timeout: float = 30.0, interval: float = 0.1) -> T:
    """Calls ``check`` until it stops raising AssertionError; re-raises the last one on timeout.

    Returns what ``check`` returned, so a test can go on with the value it waited for.
    """
    deadline = time.monotonic() + timeout
    while True:
        try:
            return check()
        except AssertionError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(interval)


def http_get(url: str) -> tuple[int, str]:
    """The status and body of a GET of ``url``; status 0 when nothing listens (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=5) as reply:
            return reply.status, reply.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.read().decode()
    except urllib.error.URLError as error:
        return 0, str(error.reason)


# A small collection's row schema: a replica, a worker and a nullable note (the reading and
# sink tests write it by hand, so each value is one a test chose).
SIZES_SCHEMA = {
    "type": "record",
    "name": "sizes",
    "fields": [
        {"name": "replica_id", "type": "string"},
        {"name": "worker_id", "type": "long"},
        {"name": "note", "type": ["null", "string"]},
    ],
}


def recorded_sleeps(monkeypatch: Any) -> list[float]:
    """``time.sleep`` recorded instead of slept, in the calling thread only: the patch is
    process-wide, and another thread that sleeps meanwhile (a heartbeat, a server left by
    an earlier test) must neither be recorded nor turned into a busy loop."""
    slept: list[float] = []
    sleep, caller = time.sleep, threading.current_thread()

    def recorded(seconds: float) -> None:
        if threading.current_thread() is caller:
            slept.append(seconds)
        else:
            sleep(seconds)

    monkeypatch.setattr(time, "sleep", recorded)
    return slept
