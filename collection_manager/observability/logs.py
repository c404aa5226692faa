"""Every process's log records on standard error: a text line each, or one JSON object a
line (``CM_LOG_FORMAT=json``) that a log pipeline parses without a grok pattern.

A JSON line holds what the text line says (``time``, ``level``, ``logger``, ``message``),
the process (``pid``) and the thread when it is not the main one, the context a call site
passed with ``extra=``, and ``exception`` when the record carries one. ``time`` is UTC in
ISO 8601 with milliseconds. Values JSON cannot hold become their ``str``.
"""

from __future__ import annotations

import datetime
import json
import logging
import os
import sys
import threading
import time
from typing import Any

TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"

# What every LogRecord has; any other attribute came with ``extra=`` and is context.
_RECORD_FIELDS = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
}


def configure(level: int, log_format: str) -> None:
    """Sends the root logger's records at ``level`` and above to stderr in ``log_format``
    (``text`` or ``json``; ``config/infra.LogConfig`` checked it)."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonLines() if log_format == "json" else logging.Formatter(TEXT))
    logging.basicConfig(level=level, handlers=[handler], force=True)


class JsonLines(logging.Formatter):
    """A record as one line of JSON."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": utc_iso(record.created),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        if record.threadName and record.thread != threading.main_thread().ident:
            line["thread"] = record.threadName
        for key, value in vars(record).items():
            if key not in _RECORD_FIELDS and key not in line:
                line[key] = value
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, default=str, ensure_ascii=False)


def json_line(message: str, logger: str, level: str = "INFO") -> bytes:
    """A line another program wrote (the Spark JVM's standard error) as a JSON line of its
    own, so that a JSON log holds nothing else."""
    line = {
        "time": utc_iso(time.time()),
        "level": level,
        "logger": logger,
        "message": message,
        "pid": os.getpid(),
    }
    return (json.dumps(line, ensure_ascii=False) + "\n").encode()


def utc_iso(seconds: float) -> str:
    """``2026-12-02T03:04:05.678Z``."""
    moment = datetime.datetime.fromtimestamp(seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"
