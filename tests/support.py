"""Helpers shared by the tests."""

from __future__ import annotations

import time
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
