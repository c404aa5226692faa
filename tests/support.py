"""Helpers shared by the tests."""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import TypeVar

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
