"""How a long-running command learns it should stop: SIGTERM or SIGINT sets an event."""

from __future__ import annotations

import signal
import threading
from types import FrameType


def stop_on_signals() -> threading.Event:
    """An event that SIGTERM and SIGINT set (from now on, in this process)."""
    # The handler only sets an event: the main thread then stops its work, so no lock is
    # taken inside a signal handler.
    stop = threading.Event()

    def handler(_signum: int, _frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)
    return stop
